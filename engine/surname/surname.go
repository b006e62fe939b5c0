// Package surname reads what a family name says about the person: the
// gender its form marks in languages that inflect surnames (Kowalska,
// Ivanova, Jonaitienė, Jónsdóttir), and the naming tradition it belongs to
// (Wang, Kim and Tanaka are East Asian; Nagy is Hungarian, written first).
//
// Keys are namekey keys (lower case); the tables hold the accent-folded
// spelling too, so Nováková and Novakova read alike.
package surname

import (
	"strings"
	"unicode/utf8"

	"github.com/genderize-kong/genderize/schema/namekey"
)

// Evidence is what a surname's form says about gender: the likelihood
// ratio P(surname form | female) / P(surname form | male). 1 is no
// evidence.
type Evidence float64

// suffixRule is one surname ending and the likelihood ratio it carries.
type suffixRule struct {
	suffix string
	lr     Evidence
	minLen int // the whole surname is at least this long (not "Nova")
}

// The ratios are deliberately moderate: a feminine form is worn by women
// almost only (a Kowalska is a woman), but the ending can also close an
// uninflected name (Slovak Baláža is rare, Czech Svoboda and Procházka end
// in -a for men too, so -a alone is not a rule), and surnames are sent
// misspelled or in the masculine for women abroad. 20 moves an even given
// name to 0.95 and a 0.9 male given name to about 0.69 female; a strong
// given name (0.99) keeps its gender against it.
const (
	strong Evidence = 20
	weak   Evidence = 4
)

var suffixRules = []suffixRule{
	// Slavic feminine: -ova/-eva/-ina (Russian, Bulgarian, Czech -ová),
	// -ska/-cka/-dzka (Polish, Czech -ská), -aya (Russian adjectival).
	{"ová", strong, 5}, {"ova", strong, 5}, {"eva", strong, 5}, {"ёва", strong, 5},
	{"ова", strong, 5}, {"ева", strong, 5}, {"ина", strong, 5}, {"ская", strong, 6},
	{"цкая", strong, 6}, {"ська", strong, 6}, {"цька", strong, 6},
	{"ská", strong, 5}, {"cká", strong, 5}, {"ska", strong, 5}, {"cka", strong, 5},
	{"dzka", strong, 6}, {"skaya", strong, 7}, {"skaia", strong, 7}, {"aya", weak, 6},
	{"ná", weak, 5}, {"ова", strong, 5},
	// Slavic masculine.
	{"ov", 1 / strong, 4}, {"ev", 1 / strong, 4}, {"ов", 1 / strong, 4}, {"ев", 1 / strong, 4},
	{"ин", 1 / weak, 4}, {"ский", 1 / strong, 5}, {"цкий", 1 / strong, 5}, {"ський", 1 / strong, 5},
	{"ski", 1 / strong, 5}, {"cki", 1 / strong, 5}, {"dzki", 1 / strong, 6}, {"sky", 1 / strong, 5},
	{"ský", 1 / strong, 5}, {"cký", 1 / strong, 5}, {"skiy", 1 / strong, 6}, {"skii", 1 / strong, 6},
	{"iy", 1 / weak, 5}, {"ий", 1 / weak, 5}, {"ý", 1 / weak, 4}, {"á", weak, 4},
	// Lithuanian: -ienė (married), -aitė/-ytė/-iūtė/-utė (unmarried)
	// against -as/-is/-us/-ys.
	{"ienė", strong, 6}, {"iene", strong, 6}, {"aitė", strong, 6}, {"aite", strong, 6},
	{"ytė", strong, 5}, {"yte", strong, 5}, {"iūtė", strong, 6}, {"iute", strong, 6},
	{"utė", strong, 5}, {"ute", weak, 6},
	{"auskas", 1 / strong, 7}, {"evičius", 1 / strong, 8}, {"avičius", 1 / strong, 8},
	{"aitis", 1 / strong, 7}, {"ūnas", 1 / strong, 6}, {"onis", 1 / strong, 6},
	// Latvian: -iņa/-a/-e against -iņš/-s/-is.
	{"iņa", strong, 5}, {"iņš", 1 / strong, 5}, {"one", weak, 6}, {"ons", 1 / weak, 6},
	// Icelandic patronymics.
	{"dóttir", strong, 7}, {"dottir", strong, 7}, {"sdóttir", strong, 8},
	// Greek: genitive feminine -ou (Papadopoulou) against -os/-is/-as;
	// Cretan -aki is a woman's form of -akis.
	{"poulou", strong, 7}, {"πούλου", strong, 7}, {"opoulos", 1 / strong, 8}, {"όπουλος", 1 / strong, 8},
	{"akis", 1 / strong, 6}, {"άκης", 1 / strong, 6}, {"aki", weak, 5}, {"άκη", strong, 5},
	{"ίδου", strong, 6}, {"idou", strong, 6}, {"ίδης", 1 / strong, 6}, {"idis", 1 / strong, 6},
}

// Icelandic -son and -sen are matched whole-word only with a given name
// (Jónsson); English Johnson says nothing, so -son is not a rule.

// Info is what a surname says.
type Info struct {
	Gender    Evidence  // see Gender
	Tradition Tradition // see Of
	Countries []string  // see Countries
}

// Read returns everything a surname key says, folding it once.
func Read(key string) Info {
	if key == "" {
		return Info{Gender: 1}
	}
	folded := namekey.Fold(key)
	return Info{gender(key, folded), traditions[folded], countries(key, folded)}
}

// Gender returns the gender evidence of a surname key.
func Gender(key string) Evidence {
	if key == "" {
		return 1
	}
	return gender(key, namekey.Fold(key))
}

func gender(key, folded string) Evidence {
	best := suffixRule{lr: 1}
	for _, k := range [2]string{key, folded} {
		if k == "" {
			continue
		}
		n := -1 // runes in k, counted when first needed
		for _, r := range suffixesByLastByte[k[len(k)-1]] {
			if len(r.suffix) <= len(best.suffix) || !strings.HasSuffix(k, r.suffix) {
				continue
			}
			if n < 0 {
				n = utf8.RuneCountInString(k)
			}
			if n >= r.minLen {
				best = r
			}
		}
	}
	return best.lr
}

// suffixesByLastByte holds suffixRules by the last byte of their suffix:
// a surname is compared with the few rules its last byte allows.
var suffixesByLastByte = func() map[byte][]suffixRule {
	m := map[byte][]suffixRule{}
	for _, r := range suffixRules {
		b := r.suffix[len(r.suffix)-1]
		m[b] = append(m[b], r)
	}
	return m
}()

// Tradition is the naming tradition a surname marks.
type Tradition int

// Traditions.
const (
	None Tradition = iota
	Chinese
	Korean
	Japanese
	Hungarian
)

// Of returns the tradition a surname key marks, None when it marks none.
// The lists are the most common surnames of each population (national
// statistics of the PRC census, Statistics Korea, the Japanese surname
// rankings, the Hungarian register): in China the 100 commonest surnames
// cover about 85% of people, in Korea Kim, Lee and Park alone 45%, so a
// short list recognises most East Asian names, while surnames shared with
// English (Lee, Young, Long, Park) count only when the given name is
// built from East Asian syllables too (see candidates).
func Of(key string) Tradition {
	return traditions[namekey.Fold(key)]
}

var traditions = func() map[string]Tradition {
	m := map[string]Tradition{}
	add := func(t Tradition, names string) {
		for _, n := range strings.Fields(names) {
			if _, dup := m[n]; !dup {
				m[n] = t
			}
		}
	}
	// Korean first: Kim, Lee, Park are read as Korean.
	add(Korean, "kim gim lee yi rhee park pak bak choi choe jung jeong chung kang cho jo yoon yun "+
		"jang chang lim im han oh seo suh shin sin kwon hwang ahn song yoo yu ryu hong jeon jun "+
		"ko go moon mun son bae baek paek heo huh nam noh roh ha kwak gwak sung seong cha joo ju "+
		"woo koo gu min jin na ji um eom chae won cheon bang kong gong hyun hyeon ham byun byeon "+
		"yeom yeo choo chu do so seok sun seol ma gil yeon wi pyo myung ki ban keum geum "+
		"ok yook yuk in maeng je mo tak kook guk eo eun pyeon yong ye kyung gyeong bong sa bu ga")
	add(Chinese, "wang li zhang ma liu chen yang huang zhao wu zhou xu sun zhu hu guo he gao lin "+
		"luo zheng liang xie tang deng feng cao peng zeng xiao tian dong yuan pan cai jiang du ye cheng "+
		"su lu ding ren shen yao zhong cui tan fan jin qian dai xia fu fang bai zou meng xiong qin qiu "+
		"jia yin xue yan lei hou duan hao kong shao shi mao chang wong chan cheung leung lau ng "+
		"tsang chow lam yeung tse kwok tsai hsu chiang kuo liao hsieh chou lai yeh tseng tsao kao "+
		"hsiao hung chien tung pang chiu chan fong fung mak wan wai siu tam tong chau hui yip au "+
		"chua tan lim teo goh ong tay koh ng chia quek yap")
	add(Japanese, "sato suzuki takahashi tanaka watanabe ito yamamoto nakamura kobayashi kato "+
		"yoshida yamada sasaki yamaguchi matsumoto inoue kimura hayashi shimizu yamazaki mori "+
		"ikeda hashimoto yamashita ishikawa nakajima maeda fujita ogawa goto okada hasegawa murakami "+
		"kondo ishii saito sakamoto endo aoki fujii nishimura fukuda ota miura fujiwara okamoto "+
		"matsuda nakagawa nakano harada ono tamura takeuchi kaneko wada nakayama ishida ueda morita "+
		"hara shibata sakai kudo yokoyama miyazaki miyamoto uchida takagi ando taniguchi ohno maruyama "+
		"imai takada fujimoto takeda murata ueno sugiyama masuda sugawara hirano otsuka kojima chiba "+
		"kubo matsui iwasaki sakurai kinoshita noguchi matsuo nomura kikuchi sano onishi sugimoto "+
		"arai hamada suga nagai watanabe takano tsuji kawaguchi")
	add(Hungarian, "nagy kovacs toth szabo horvath varga kiss molnar nemeth farkas balogh papp "+
		"takacs juhasz lakatos meszaros olah racz fekete szilagyi torok feher gal kis szucs kocsis "+
		"orsos pinter fodor szalai sipos magyar lukacs gulyas biro kiraly katona "+
		"halasz boros fazekas kelemen orosz somogyi fulop veres budai vincze hegedus deak pap "+
		"illes vass szoke voros lengyel bognar bodnar hajdu szekely pasztor "+
		"bakos dudas orban soos nemes pataki balla kozma")
	return m
}()
