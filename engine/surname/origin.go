package surname

import (
	"strings"
	"unicode/utf8"

	"github.com/genderize-kong/genderize/schema/namekey"
)

// Countries returns the countries whose name data fits the language a
// surname key marks, best first, or nil when it marks none. Only endings
// and names that belong to one language are used: -ski is Polish, -nen
// Finnish, -escu Romanian, -opoulos Greek, and the commonest surnames of
// the countries whose given names change gender with the country (Italian
// Andrea, Nicola and Simone are men; German Sascha; Scandinavian Kim,
// Kari and Janne men, Gerd a woman in Norway and Denmark). A surname that
// is common in several languages (Martin, Simon, Costa) marks none.
//
// A data-driven guess (a character trigram model per country trained on
// the database's given names, commit 70a7c1c) was measured first and
// dropped: on held-out names its top country was right 25% of the time,
// 40% when it was confident, because the large registers (CH, DK, CA, US)
// hold names of every origin.
func Countries(key string) []string {
	return countries(key, namekey.Fold(key))
}

func countries(key, k string) []string {
	if cs, ok := originNames[k]; ok {
		return cs
	}
	if t := traditions[k]; t == Japanese {
		return jp
	} else if t == Hungarian {
		return hu
	}
	for _, r := range originSuffixes {
		if strings.HasSuffix(key, r.suffix) && utf8.RuneCountInString(key) >= r.minLen ||
			strings.HasSuffix(k, r.suffix) && len(k) >= r.minLen {
			return r.countries
		}
	}
	return nil
}

var (
	it = []string{"IT"}
	fr = []string{"FR", "BE"}
	de = []string{"DE", "AT", "CH"}
	fi = []string{"FI"}
	se = []string{"SE"}
	dk = []string{"DK", "NO"}
	no = []string{"NO", "DK"}
	is = []string{"IS"}
	es = []string{"ES", "MX"}
	pt = []string{"PT", "BR"}
	pl = []string{"PL"}
	cz = []string{"CZ", "SK"}
	hu = []string{"HU"}
	ro = []string{"RO"}
	hr = []string{"HR", "RS"}
	gr = []string{"GR"}
	tr = []string{"TR"}
	jp = []string{"JP"}
	lt = []string{"LT"}
	lv = []string{"LV"}
	nl = []string{"NL", "BE"}
)

type originSuffix struct {
	suffix    string
	minLen    int
	countries []string
}

// originSuffixes are tried in order; longer, more specific endings first.
var originSuffixes = []originSuffix{
	{"opoulos", 8, gr}, {"opoulou", 8, gr}, {"όπουλος", 8, gr}, {"οπούλου", 8, gr},
	{"akis", 6, gr}, {"άκης", 6, gr}, {"idis", 6, gr}, {"ίδης", 6, gr}, {"idou", 6, gr}, {"ίδου", 6, gr},
	{"ος", 4, gr}, {"ης", 4, gr}, {"ου", 4, gr},
	{"dóttir", 7, is}, {"dottir", 7, is},
	{"sson", 6, se}, {"qvist", 6, se}, {"ström", 6, se}, {"strom", 7, se},
	{"sen", 5, dk},
	{"nen", 6, fi}, {"lä", 5, fi},
	{"escu", 6, ro}, {"eanu", 6, ro},
	{"owski", 6, pl}, {"owska", 6, pl}, {"ewski", 6, pl}, {"ewska", 6, pl}, {"ński", 6, pl},
	{"ńska", 6, pl}, {"wicz", 6, pl}, {"czyk", 6, pl}, {"czak", 6, pl}, {"dzki", 6, pl}, {"dzka", 6, pl},
	{"ski", 6, pl}, {"ska", 6, pl}, {"cki", 6, pl}, {"cka", 6, pl},
	{"ová", 5, cz}, {"ský", 5, cz}, {"ská", 5, cz}, {"cký", 5, cz}, {"cká", 5, cz},
	{"ović", 5, hr}, {"ević", 5, hr}, {"ić", 4, hr}, {"ovic", 6, hr}, {"evic", 6, hr},
	{"oğlu", 6, tr},
	{"auskas", 7, lt}, {"iauskas", 8, lt}, {"ienė", 6, lt}, {"aitė", 6, lt}, {"ytė", 5, lt}, {"aitis", 7, lt},
	{"iņš", 5, lv}, {"iņa", 5, lv},
	{"ini", 5, it}, {"elli", 6, it}, {"etti", 6, it}, {"otti", 6, it}, {"ucci", 6, it},
	{"acci", 6, it}, {"azzi", 6, it}, {"uzzi", 6, it}, {"ello", 6, it},
	{"eau", 5, fr}, {"eaux", 6, fr}, {"ault", 6, fr},
	{"ández", 6, es}, {"ández", 6, es}, {"ánchez", 6, es}, {"ínez", 6, es}, {"íguez", 6, es},
	{"andez", 7, es}, {"anchez", 7, es}, {"inez", 6, es}, {"iguez", 7, es}, {"alez", 6, es},
	{"eira", 6, pt}, {"eiro", 6, pt}, {"ões", 5, pt},
	{"mann", 6, de},
}

// originNames are common surnames of one language, from the national
// top-surname lists, without the ones that are also given names (Simon,
// Thomas, Martin) or common in several languages (Costa, Novak).
var originNames = func() map[string][]string {
	m := map[string][]string{}
	add := func(cs []string, names string) {
		for _, n := range strings.Fields(names) {
			m[n] = cs
		}
	}
	add(it, "rossi russo ferrari esposito bianchi romano colombo ricci marino greco bruno gallo conti "+
		"deluca mancini giordano rizzo lombardi moretti barbieri fontana santoro mariani rinaldi caruso "+
		"ferrara galli leone longo gentile vitale lombardo coppola desantis marchetti parisi conte "+
		"ferraro ferri fabbri bianco marini grasso valentini messina gatti pellegrini palumbo sanna "+
		"farina rizzi monti cattaneo morelli amato silvestri mazza testa grassi pellegrino carbone "+
		"giuliani benedetti barone caputo montanari guerra palmieri bernardi martino fiore ferretti "+
		"bellini basile riva donati piras vitali battaglia sartori neri costantini milani pagano "+
		"ruggiero sorrentino orlando negri esposito")
	add(fr, "dubois durand moreau lefebvre leroy roux morel fournier girard bonnet dupont lambert "+
		"fontaine rousseau mercier blanc guerin boyer garnier chevalier legrand gauthier perrin "+
		"clement morin roussel gautier masson marchand duval dumont lemaire dufour meunier brun "+
		"blanchard giraud joly riviere brunet gaillard barbier arnaud roche renard caron picard fabre "+
		"aubert lemoine renaud dumas lacroix bourgeois leclerc rolland leclercq lecomte dupuis guillot "+
		"carpentier moulin deschamps huet vasseur boucher fleury royer jacquet poirier aubry guyot "+
		"charpentier menard maillard bailly bouvier prevost perrot lefevre")
	add(de, "muller mueller schmidt schneider fischer weber meyer wagner becker schulz hoffmann schafer "+
		"schaefer koch bauer richter klein wolf schroder schroeder neumann schwarz zimmermann braun "+
		"kruger krueger hofmann hartmann schmitt werner schmitz krause meier lehmann schmid schulze "+
		"maier kohler koehler herrmann konig koenig mayer huber kaiser fuchs scholz moller weiss hahn "+
		"schubert vogel keller winkler roth beck lorenz baumann franke albrecht schuster bohm "+
		"kraus schumacher kramer vogt jager sommer gross seidel brandt haas schreiber graf "+
		"schulte dietrich ziegler kuhn pohl horn busch bergmann voigt sauer wolff pfeiffer "+
		"gruber pichler moser steiner hofer leitner berger fuchs eder fischer")
	add(fi, "korhonen virtanen makinen nieminen makela hamalainen laine heikkinen koskinen jarvinen "+
		"lehtonen lehtinen saarinen salminen heinonen niemi heikkila kinnunen salonen turunen "+
		"salo laitinen tuominen rantanen karjalainen jokinen mattila savolainen lahtinen ahonen")
	add(se, "andersson johansson karlsson nilsson eriksson larsson olsson persson svensson "+
		"gustafsson pettersson jonsson jansson hansson bengtsson lindberg lindstrom lindqvist "+
		"lindgren berglund axelsson lundberg lundgren mattsson")
	add(no, "hansen johansen olsen larsen andersen pedersen nilsen kristiansen jensen karlsen "+
		"johnsen pettersen eriksen berg haugen hagen johannessen andreassen jacobsen dahl halvorsen")
	add(dk, "nielsen christensen sorensen rasmussen jorgensen madsen kristensen thomsen "+
		"poulsen knudsen mortensen mogensen moller")
	add(es, "garcia rodriguez gonzalez fernandez lopez martinez sanchez perez gomez jimenez ruiz "+
		"hernandez diaz moreno alvarez munoz romero alonso gutierrez navarro torres dominguez "+
		"vazquez ramos gil ramirez serrano blanco molina morales suarez ortega delgado castro "+
		"ortiz rubio marin sanz nunez iglesias medina garrido cortes castillo santos lozano guerrero")
	add(pt, "silva santos ferreira pereira oliveira rodrigues martins jesus sousa souza fernandes "+
		"goncalves gomes lopes marques alves almeida ribeiro pinto carvalho teixeira moreira correia "+
		"mendes nunes soares vieira monteiro cardoso rocha neves coelho cunha pires barbosa lima")
	add(pl, "nowak wojcik kowalczyk wozniak mazur krawczyk kaczmarek zajac krol wieczorek "+
		"jablonski wrobel majewski olszewski jaworski malinowski pawlak witkowski walczak stepien")
	add(cz, "novak svoboda novotny dvorak cerny prochazka kucera vesely horak nemec pokorny "+
		"marek pospisil hajek jelinek kral ruzicka benes fiala sedlacek")
	add(ro, "popa pop radu dumitru stan stoica gheorghe matei ciobanu rusu munteanu moldovan "+
		"lazar florea ene")
	add(tr, "yilmaz kaya demir sahin celik yildiz yildirim ozturk aydin ozdemir arslan dogan "+
		"kilic aslan cetin kara koc kurt ozkan simsek")
	add(nl, "jansen janssen bakker visser smit meijer mulder bos vos hendriks dekker dijkstra "+
		"vermeulen vandenberg vanderberg devries dejong vandijk")
	return m
}()
