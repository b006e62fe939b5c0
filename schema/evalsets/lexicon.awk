# Turns lexicons (locale <TAB> sex <TAB> name [<TAB> variant]) into a
# labelled set for `genderize-db eval`: name, gender, country (the locale's
# region when it names one: fr_BE -> BE; else empty), source (the locale).
# A name labelled both F and M in one locale gets u (not scored).
#   zcat lexicons/faker_first_names.tsv.gz | awk -f lexicon.awk > faker.tsv
BEGIN { FS = OFS = "\t"; print "name", "gender", "country", "source" }
NF >= 3 && ($2 == "F" || $2 == "M") {
	k = $1 SUBSEP $3
	if (!(k in sex)) { order[++n] = k; sex[k] = tolower($2) }
	else if (sex[k] != tolower($2)) sex[k] = "u"
}
END {
	for (i = 1; i <= n; i++) {
		split(order[i], p, SUBSEP)
		region = ""
		if (split(p[1], part, "_") >= 2 && part[2] ~ /^[A-Z][A-Z]$/) region = part[2]
		print p[2], sex[order[i]], region, p[1]
	}
}
