package translit

import (
	"slices"
	"testing"
)

func TestToLatin(t *testing.T) {
	tests := []struct {
		key  string
		want string // must be among the variants
		none bool   // no variants at all
	}{
		{key: "γιώργος", want: "giorgos"},
		{key: "ελένη", want: "eleni"},
		{key: "χρήστος", want: "christos"},
		{key: "χρήστος", want: "hristos"},
		{key: "μπάμπης", want: "bampis"},
		{key: "юлия", want: "yuliya"},
		{key: "юлия", want: "yulia"},
		{key: "дмитрий", want: "dmitriy"},
		{key: "дмитрий", want: "dmitrii"},
		{key: "олександр", want: "oleksandr"},
		{key: "іванна", want: "ivanna"},
		{key: "андрій", want: "andriy"},
		{key: "анаһит", none: true},
		{key: "անահիտ", want: "anahit"},
		{key: "երվանդ", want: "yervand"},
		{key: "ნინო", want: "nino"},
		{key: "さくら", want: "sakura"},
		{key: "ゆうこ", want: "yuko"},
		{key: "ゆうこ", want: "yuuko"},
		{key: "きょうこ", want: "kyoko"},
		{key: "しょうた", want: "shota"},
		{key: "けんた", want: "kenta"},
		{key: "いっせい", want: "issei"},
		{key: "サクラ", want: "sakura"},
		{key: "민준", want: "minjun"},
		{key: "서연", want: "seoyeon"},
		{key: "maria", none: true},
		{key: "李伟", none: true},
		{key: "γιώργος παπαδόπουλος", want: "giorgos papadopoulos"},
	}
	for _, tt := range tests {
		got := ToLatin(tt.key)
		if tt.none {
			if got != nil {
				t.Errorf("ToLatin(%q) = %q, want none", tt.key, got)
			}
			continue
		}
		if !slices.Contains(got, tt.want) || len(got) > MaxVariants {
			t.Errorf("ToLatin(%q) = %q, want %q among at most %d", tt.key, got, tt.want, MaxVariants)
		}
	}
}

func TestSkeletons(t *testing.T) {
	tests := []struct {
		abjad, latin string
		match        bool
	}{
		{"محمد", "mohammed", true},
		{"محمد", "muhammad", true},
		{"محمد", "mohamed", true},
		{"محمد", "mahmoud", false},
		{"فاطمة", "fatima", true},
		{"فاطمة", "fatimah", true},
		{"علي", "ali", true},
		{"عمر", "omar", true},
		{"عبدالله", "abdullah", true},
		{"مریم", "maryam", true},
		{"آناهیتا", "anahita", true},
		{"דוד", "david", true},
		{"שרה", "sarah", true},
		{"שרה", "sara", true},
		{"יעל", "yael", true},
		{"נועה", "noa", true},
		{"צבי", "tzvi", true},
		{"צבי", "david", false},
		{"محمود", "mahmoud", true},
		{"يوسف", "yousef", true},
		{"يوسف", "yusuf", true},
		{"יוסף", "yosef", true},
	}
	for _, tt := range tests {
		ls := LatinSkeleton(tt.latin)
		got := slices.Contains(Skeletons(tt.abjad), ls)
		if got != tt.match {
			t.Errorf("%s (%q) vs %s (%q): match %v, want %v", tt.abjad, Skeletons(tt.abjad), tt.latin, ls, got, tt.match)
		}
	}
}

func TestRomaji(t *testing.T) {
	tests := []struct {
		key, short string
		romaji     bool
	}{
		{"yuuko", "yuko", true},
		{"kouhei", "kohei", true},
		{"yuko", "", true},
		{"sakura", "", true},
		{"shouta", "shota", true},
		{"louise", "", false},
		{"maria", "", true},
		{"john", "", false},
		{"a", "", false},
		{"aabia", "", true},
		{"ahoo", "", true},
		{"akoun", "", true},
	}
	for _, tt := range tests {
		if got := IsRomaji(tt.key); got != tt.romaji {
			t.Errorf("IsRomaji(%q) = %v", tt.key, got)
		}
		if got := RomajiShort(tt.key); got != tt.short {
			t.Errorf("RomajiShort(%q) = %q, want %q", tt.key, got, tt.short)
		}
	}
}

func TestScriptOf(t *testing.T) {
	tests := map[string]Script{
		"maria": Latin, "josé": Latin, "γιώργος": Greek, "юлия": Cyrillic, "さくら": Kana,
		"サクラ": Kana, "민준": Hangul, "李伟": Han, "محمد": Arabic, "דוד": Hebrew, "": Other, "123": Other,
	}
	for k, want := range tests {
		if got := ScriptOf(k); got != want {
			t.Errorf("ScriptOf(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestSyllables(t *testing.T) {
	tests := map[string]int{
		"xiaoming": 2, "ming": 1, "seoyeon": 2, "minjun": 2, "jiahao": 2, "wei": 1, "hsiao": 1,
		"zhang": 1, "john": 0, "christopher": 0, "elizabeth": 0, "": 0,
	}
	for w, want := range tests {
		if got := Syllables(w); got != want {
			t.Errorf("Syllables(%q) = %d, want %d", w, got, want)
		}
	}
}
