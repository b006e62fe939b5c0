# Turns lexicons (locale <TAB> sex <TAB> name [<TAB> variant]) into a
# labelled set for `genderize-db eval`: name, gender, source (the locale).
# A name labelled both F and M in one locale gets u (not scored).
#   zcat lexicons/faker_first_names.tsv.gz | awk -f lexicon.awk > faker.tsv
BEGIN { FS = OFS = "\t"; print "name", "gender", "source" }
NF >= 3 && ($2 == "F" || $2 == "M") {
	k = $1 SUBSEP $3
	if (!(k in sex)) { order[++n] = k; sex[k] = tolower($2) }
	else if (sex[k] != tolower($2)) sex[k] = "u"
}
END {
	for (i = 1; i <= n; i++) {
		split(order[i], p, SUBSEP)
		print p[2], sex[order[i]], p[1]
	}
}
