package engine

import (
	"strings"
	"unicode"

	"github.com/genderize-kong/genderize/schema/namekey"
)

// candidate is one key a name is looked up under.
type candidate struct {
	key    string
	folded bool // an accent-folded key: read its folded row, else its exact row
}

// maxCandidates bounds the keys tried for one name (see candidates).
const maxCandidates = 16

// titles are skipped before a given name ("Dr. Maria Lopez"). Words that
// are also given names (Don, Dona) are not titles here.
var titles = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "miss": true, "mx": true, "dr": true, "prof": true,
	"sir": true, "dame": true, "herr": true, "frau": true, "mme": true, "mlle": true,
	"sr": true, "sra": true, "srta": true, "sig": true, "sig.ra": true, "dott": true,
}

// candidates returns the keys a name with exact key key is looked up under,
// in the order they are tried; the first with data answers. Each key is
// tried exactly, then accent-folded:
//
//  1. the whole name ("maria carmen");
//  2. for a full name, its given name: the part after the comma in
//     "Last, First" order, else the words from the start; leading initials
//     and titles are skipped ("Dr. J. Robert Oppenheimer" -> robert); a
//     compound given name is tried whole before its first part: the first
//     two words ("Maria Carmen Lopez" -> maria carmen -> maria), then the
//     first word ("Marie-Claire Dubois" -> marie-claire -> marie);
//  3. when name starts with a word in capitals followed by words that are
//     not ("DUPONT Jean-Pierre", the order of French forms and registers),
//     the given name after that word, the same way.
func candidates(name, key string, dst []candidate) []candidate {
	add := func(k string) {
		k = strings.TrimSpace(k)
		if k == "" {
			return
		}
		for _, c := range dst {
			if c.key == k && !c.folded {
				return
			}
		}
		dst = append(dst, candidate{key: k})
		// Tried even when folding changes nothing: "joao" has no exact
		// row, but the folded row of João is stored under it.
		if f := namekey.Fold(k); f != "" {
			for _, c := range dst {
				if c.key == f && c.folded {
					return
				}
			}
			dst = append(dst, candidate{key: f, folded: true})
		}
	}
	addGiven := func(words []string) {
		if len(words) >= 2 {
			add(words[0] + " " + words[1])
		}
		add(words[0])
		if head, _, ok := strings.Cut(words[0], "-"); ok && !namekey.IsInitial(head) {
			add(head)
		}
	}
	given := key
	last, first, comma := strings.Cut(key, ",")
	if comma {
		given = first
		if strings.TrimSpace(first) == "" {
			// "Smith," names nobody: keep what there is.
			given = last
		}
	} else {
		add(key)
	}
	words := strings.Fields(given)
	skipped := false
	for len(words) > 1 && (namekey.IsInitial(words[0]) || titles[strings.TrimSuffix(words[0], ".")]) {
		words = words[1:]
		skipped = true
	}
	if len(words) == 0 {
		return dst
	}
	addGiven(words)
	if len(words) > 1 && !comma && !skipped && surnameFirst(name) {
		addGiven(words[1:])
	}
	if len(dst) > maxCandidates {
		dst = dst[:maxCandidates]
	}
	return dst
}

// surnameFirst reports whether name starts with a word of two or more
// letters all in capitals and has a later word with a lower-case letter.
func surnameFirst(name string) bool {
	first, rest, ok := strings.Cut(strings.TrimSpace(name), " ")
	if !ok {
		return false
	}
	letters := 0
	for _, r := range first {
		switch {
		case unicode.IsLower(r):
			return false
		case unicode.IsUpper(r):
			letters++
		}
	}
	return letters >= 2 && strings.IndexFunc(rest, unicode.IsLower) >= 0
}
