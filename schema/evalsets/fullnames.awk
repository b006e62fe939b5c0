# Pairs held-out given names with surnames typical of their country, for
# `genderize-db eval`. Inputs: the surnames (surname <TAB> country [<TAB>
# count or F/M], most frequent first; lines starting with # are comments),
# then the held-out file of `genderize-db build -holdout-out` (name,
# country, gender, female, male, source). Each given name with a gender in
# a country with surnames gets one of them, chosen from its line number
# (deterministic, spread evenly); a surname marked F or M goes only to
# names of that sex. At most TOP surnames per country are used. With
# FIRST=1 the same rows are written with the given name only: the baseline
# a full name must beat.
#   cat us_surnames.tsv surnames.tsv | awk -f fullnames.awk - heldout.tsv
BEGIN {
	FS = OFS = "\t"
	if (TOP == "") TOP = 1000
	if (FIRST) print "name", "gender", "country", "female", "male", "source"
	else print "first", "last", "gender", "country", "female", "male", "source"
}
# title capitalises each word of an ASCII upper- or lower-case name
# (SMITH -> Smith); other scripts are left as they are.
function title(s,    out, w, i, n) {
	n = split(tolower(s), w, " ")
	for (i = 1; i <= n; i++)
		out = out (i > 1 ? " " : "") toupper(substr(w[i], 1, 1)) substr(w[i], 2)
	return out
}
FNR == NR {
	if ($0 ~ /^#/ || NF < 2) next
	c = $2
	if ($3 == "F" || $3 == "M") { if (n[c, $3] < TOP) sur[c, $3, n[c, $3]++] = $1 }
	else if (n[c, ""] < TOP) sur[c, "", n[c, ""]++] = ($1 ~ /^[A-Z]+$/ ? title($1) : $1)
	next
}
FNR == 1 { next }
$3 == "f" || $3 == "m" {
	c = $2; sex = toupper($3)
	any = n[c, ""] + 0; own = n[c, sex] + 0
	if (any + own == 0) next
	i = (FNR * 7919) % (any + own)
	last = i < any ? sur[c, "", i] : sur[c, sex, i - any]
	if (FIRST) print title($1), $3, $2, $4, $5, $6
	else print title($1), last, $3, $2, $4, $5, $6
}
