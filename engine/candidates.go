package engine

import (
	"strings"

	"github.com/genderize-kong/genderize/engine/namekey"
)

// candidate is one key a name is looked up under.
type candidate struct {
	key    string
	folded bool // an accent-folded key: read its folded row, else its exact row
}

// maxCandidates bounds the keys tried for one name (see candidates).
const maxCandidates = 10

// candidates returns the keys a name with exact key key is looked up under,
// in the order they are tried; the first with data answers. Each key is
// tried exactly, then accent-folded:
//
//  1. the whole name ("maria carmen");
//  2. for a full name, its given name: the part after the comma in
//     "Last, First" order, else the words from the start; leading initials
//     are skipped ("J. Robert Oppenheimer" -> robert); a compound given name
//     is tried whole before its first part: the first two words ("Maria
//     Carmen Lopez" -> maria carmen -> maria), then the first word
//     ("Marie-Claire Dubois" -> marie-claire -> marie).
func candidates(key string, dst []candidate) []candidate {
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
	given := key
	if last, first, ok := strings.Cut(key, ","); ok {
		given = first
		if strings.TrimSpace(first) == "" {
			// "Smith," names nobody: keep what there is.
			given = last
		}
	} else {
		add(key)
	}
	words := strings.Fields(given)
	for len(words) > 1 && namekey.IsInitial(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return dst
	}
	if len(words) > 2 {
		add(words[0] + " " + words[1])
	} else if len(words) == 2 {
		add(words[0] + " " + words[1])
	}
	add(words[0])
	if head, _, ok := strings.Cut(words[0], "-"); ok && !namekey.IsInitial(head) {
		add(head)
	}
	if len(dst) > maxCandidates {
		dst = dst[:maxCandidates]
	}
	return dst
}
