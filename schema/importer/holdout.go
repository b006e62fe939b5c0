package importer

import (
	"bufio"
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strings"
)

// Holdout keeps a fixed share of every source's names out of a build, to
// evaluate the database on names it was not built from. The choice is a
// hash of the source id and the name's key, not a random draw: the same
// inputs and share hold out the same names on every machine, and a larger
// share holds out a superset. A name held out of one source stays in the
// others (as a name missing from one register still is in others).
type Holdout struct {
	Share float64   // of each source's distinct keys, 0 < Share < 1
	Out   io.Writer // gets the held-out names, see writeHeldOut
}

// keeps reports whether the key of source is held out.
func (h *Holdout) keeps(source, key string) bool {
	if h == nil {
		return false
	}
	f := fnv.New64a()
	f.Write([]byte(source))
	f.Write([]byte{0})
	f.Write([]byte(key))
	return float64(f.Sum64()) < h.Share*math.MaxUint64
}

// heldEntry is a held-out (key, country) of one source.
type heldEntry struct {
	entry
	source string
}

// add counts n records of one sex, worth evidence.
func (t tally) add(female bool, n int64, evidence float64) tally {
	if female {
		t.female += n
	} else {
		t.male += n
	}
	t.evidence += evidence
	return t
}

// HeldOutHeader is the first line of the held-out file: the columns that
// genderize-db eval reads (name, gender, country, source) and the counts
// the label comes from.
const HeldOutHeader = "name\tcountry\tgender\tfemale\tmale\tsource"

// writeHeldOut writes one line per held-out (key, country, source), sorted,
// labelled with the majority sex of its counts (u for a tie).
func writeHeldOut(w io.Writer, held map[heldEntry]tally) error {
	entries := make([]heldEntry, 0, len(held))
	for e := range held {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b heldEntry) int {
		return cmp.Or(strings.Compare(a.source, b.source), strings.Compare(a.key, b.key), strings.Compare(a.country, b.country))
	})
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, HeldOutHeader)
	for _, e := range entries {
		t := held[e]
		gender := "u"
		switch {
		case t.female > t.male:
			gender = "f"
		case t.male > t.female:
			gender = "m"
		}
		fmt.Fprintf(bw, "%s\t%s\t%s\t%d\t%d\t%s\n", e.key, e.country, gender, t.female, t.male, e.source)
	}
	return bw.Flush()
}
