package origin

import (
	"database/sql"
	"hash/fnv"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

func TestTopToy(t *testing.T) {
	b := NewBuilder()
	it := strings.Fields("giuseppe giovanni antonio mario luigi francesco rossi russo bianchi esposito colombo ricci marino greco bruno gallo conti")
	fi := strings.Fields("matti mikko juha jukka timo kari korhonen virtanen nieminen makinen hamalainen laine heikkinen koskinen jarvinen")
	for i := 0; i < MinNames; i++ {
		b.Add("IT", it[i%len(it)])
		b.Add("FI", fi[i%len(fi)])
	}
	m := b.Build()
	tests := []struct{ key, want string }{
		{"andrea rossini", "IT"},
		{"kari nieminen", "FI"},
		{"giuseppina", "IT"},
		{"jukkanen", "FI"},
	}
	for _, tt := range tests {
		g := m.Top(tt.key, 2)
		if len(g) != 2 || g[0].Country != tt.want || g[0].P < g[1].P {
			t.Errorf("Top(%q) = %v, want %s first", tt.key, g, tt.want)
		}
	}
	if g := m.Top("", 2); g != nil {
		t.Errorf("Top of nothing = %v", g)
	}
	if NewBuilder().Build() != nil {
		t.Error("an empty builder built a model")
	}
}

// TestHeldOut trains on 90% of each country's names in the database and
// reports how often the model's top country is right on the other 10%,
// overall and for its confident guesses.
func TestHeldOut(t *testing.T) {
	path := os.Getenv("GENDERIZE_DB")
	if path == "" {
		t.Skip("GENDERIZE_DB not set")
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	rows, err := db.Query(`SELECT key, coalesce(sole, country) FROM names WHERE form = 0 AND female + male >= 3 AND instr(key, ' ') = 0 AND (country <> '' OR sole IS NOT NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder()
	type kc struct{ key, country string }
	var held []kc
	for rows.Next() {
		var k, c string
		if err := rows.Scan(&k, &c); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(k, " ") {
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(k))
		if h.Sum32()%10 == 0 {
			held = append(held, kc{k, c})
			continue
		}
		b.Add(c, k)
	}
	read := time.Since(start)
	m := b.Build()
	t.Logf("read %v, build %v, %d countries, %d trigrams, %d held out", read, time.Since(start)-read, len(m.countries), len(m.index), len(held))
	known := map[string]bool{}
	for _, c := range m.countries {
		known[c] = true
	}
	var n, right, conf, confRight int
	for _, h := range held {
		if !known[h.country] {
			continue
		}
		n++
		g := m.Top(h.key, 1)
		if g[0].Country == h.country {
			right++
		}
		if g[0].P >= 0.5 {
			conf++
			if g[0].Country == h.country {
				confRight++
			}
		}
	}
	for _, k := range []string{"andrea rossi", "andrea smith", "andrea müller", "jean dubois", "jean miller", "kari korhonen", "kari johnson", "janne virtanen", "gerd schmidt", "nicola rossi", "nicola smith", "simone ferrari", "simone martin", "sascha müller", "kim nielsen", "kim smith", "dominique durand", "rossi", "kowalski", "nagy", "papadopoulos", "yilmaz", "garcia"} {
		t.Logf("%s: %v", k, m.Top(k, 3))
	}
	t.Logf("held-out names %d: top-1 right %.3f; confident (p >= 0.5) %.3f of them, right %.3f", n, float64(right)/float64(n), float64(conf)/float64(n), float64(confRight)/float64(conf))
}
