# Pairs held-out given names of one country with surnames typical of it,
# for `genderize-db eval`. Inputs: the surname statistics (surname <TAB>
# country <TAB> count, most frequent first), then the held-out file of
# `genderize-db build -holdout-out` (name, country, gender, female, male,
# source). Each given name of COUNTRY with a gender gets one of the TOP most
# frequent surnames, chosen from its line number (deterministic, spread
# evenly). With FIRST=1 the same rows are written with the given name only,
# the baseline a full name must beat.
#   awk -v COUNTRY=US -f fullnames.awk <(zcat surnames/us_census2000.tsv.gz) heldout.tsv
BEGIN {
	FS = OFS = "\t"
	if (TOP == "") TOP = 1000
	if (FIRST) print "name", "gender", "country", "female", "male", "source"
	else print "first", "last", "gender", "country", "female", "male", "source"
}
function title(s,    out, w, i, n) {
	n = split(s, w, " ")
	for (i = 1; i <= n; i++)
		out = out (i > 1 ? " " : "") toupper(substr(w[i], 1, 1)) substr(w[i], 2)
	return out
}
FNR == NR { if ($2 == COUNTRY && ns < TOP) surname[ns++] = title(tolower($1)); next }
FNR == 1 { next }
$2 == COUNTRY && ($3 == "f" || $3 == "m") {
	if (ns == 0) { print "fullnames.awk: no surnames of " COUNTRY > "/dev/stderr"; exit 1 }
	i = (FNR * 7919) % ns
	if (FIRST) print title($1), $3, $2, $4, $5, $6
	else print title($1), surname[i], $3, $2, $4, $5, $6
}
