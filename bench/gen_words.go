package main

// The word lists the generator draws from. They are meant to look like what a real
// service stores: names from many countries in their own scripts, apostrophes, a few
// characters JSON must escape, e-mail addresses of every length, prices that are
// mostly small.
//
// Two words carry the benchmark's filters, and no other word may contain them (the
// generator test checks): only annNames contain "ann" (REST search=ann, about 0.5% of
// users), and only proSuffix contains "pro" (the OData filter
// contains(tolower(name),'pro'), about 2.5% of products with price gt 500).

// namePart is a given or family name as written and as its owner would spell it in
// an e-mail address (lower-case ASCII).
type namePart struct{ text, ascii string }

// nameStyle is how the people of one region are named.
type nameStyle struct {
	weight      int // relative share of users
	given       []namePart
	family      []namePart
	familyFirst bool   // the family name comes first (East Asia)
	sep         string // between the two: " " or, in Chinese, nothing
	domains     []string
}

func parts(pairs ...string) []namePart {
	ps := make([]namePart, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		ps = append(ps, namePart{pairs[i], pairs[i+1]})
	}
	return ps
}

var nameStyles = []nameStyle{
	{weight: 30, sep: " ", domains: []string{"gmail.com", "outlook.com", "yahoo.com", "icloud.com", "hotmail.co.uk", "comcast.net"},
		given: parts("Alice", "alice", "Bob", "bob", "Carol", "carol", "David", "david", "Emily", "emily", "Frank", "frank",
			"Grace", "grace", "Henry", "henry", "Isaac", "isaac", "Jack", "jack", "Kevin", "kevin", "Laura", "laura",
			"Michael", "michael", "Olivia", "olivia", "Peter", "peter", "Rachel", "rachel", "Sarah", "sarah",
			"Thomas", "thomas", "Victoria", "victoria", "William", "william", "Zoe", "zoe", "Siobhán", "siobhan",
			"Seán", "sean", "Niamh", "niamh", "Aoife", "aoife"),
		family: parts("Smith", "smith", "Jones", "jones", "Miller", "miller", "Davis", "davis", "Wilson", "wilson",
			"Taylor", "taylor", "Clark", "clark", "Walker", "walker", "Wright", "wright", "Baker", "baker",
			"Campbell", "campbell", "Mitchell", "mitchell", "Roberts", "roberts", "Turner", "turner", "Parker", "parker",
			"O'Brien", "obrien", "O'Connor", "oconnor", "O'Neill", "oneill", "McDonald", "mcdonald", "Ó Súilleabháin", "osullivan")},
	{weight: 9, sep: " ", domains: []string{"gmail.com", "hotmail.es", "telefonica.net", "uol.com.br", "sapo.pt"},
		given: parts("José", "jose", "María", "maria", "Sofía", "sofia", "Joaquín", "joaquin", "Lucía", "lucia",
			"João", "joao", "Inês", "ines", "Álvaro", "alvaro", "Begoña", "begona", "Iñigo", "inigo"),
		family: parts("García", "garcia", "Núñez", "nunez", "Peña", "pena", "Ibáñez", "ibanez", "Gonçalves", "goncalves",
			"Fernández", "fernandez", "López", "lopez", "Muñoz", "munoz", "Sánchez", "sanchez", "Conceição", "conceicao")},
	{weight: 5, sep: " ", domains: []string{"libero.it", "gmail.com", "tiscali.it"},
		given: parts("Giuseppe", "giuseppe", "Chiara", "chiara", "Lorenzo", "lorenzo", "Giulia", "giulia", "Niccolò", "niccolo"),
		family: parts("D'Angelo", "dangelo", "De Luca", "deluca", "Russo", "russo", "Esposito", "esposito",
			"Dell'Acqua", "dellacqua", "D'Amico", "damico", "Bianchi", "bianchi")},
	{weight: 5, sep: " ", domains: []string{"orange.fr", "free.fr", "laposte.net", "gmail.com"},
		given: parts("François", "francois", "Zoé", "zoe", "Hélène", "helene", "Jérôme", "jerome", "Benoît", "benoit",
			"Léa", "lea", "Maëlys", "maelys", "Gaël", "gael"),
		family: parts("Lefèvre", "lefevre", "Dubois", "dubois", "Lévesque", "levesque", "Gauthier", "gauthier",
			"Dupont", "dupont", "Bérubé", "berube", "Côté", "cote")},
	{weight: 6, sep: " ", domains: []string{"web.de", "gmx.de", "t-online.de", "gmx.at", "bluewin.ch"},
		given: parts("Jürgen", "juergen", "Jörg", "joerg", "Lukas", "lukas", "Greta", "greta", "Matthias", "matthias",
			"Björn", "bjoern", "Käthe", "kaethe", "Uwe", "uwe"),
		family: parts("Müller", "mueller", "Groß", "gross", "Schröder", "schroeder", "Weiß", "weiss", "Bäcker", "baecker",
			"Schäfer", "schaefer", "Köhler", "koehler", "Krüger", "krueger")},
	{weight: 3, sep: " ", domains: []string{"gmail.com", "online.no", "telia.com", "mail.dk"},
		given: parts("Søren", "soren", "Åsa", "asa", "Bjørn", "bjorn", "Øystein", "oystein", "Ingrid", "ingrid", "Sigríður", "sigridur"),
		family: parts("Sørensen", "sorensen", "Ødegård", "odegard", "Ångström", "angstrom", "Johansson", "johansson",
			"Þórsdóttir", "thorsdottir", "Lindqvist", "lindqvist")},
	{weight: 4, sep: " ", domains: []string{"wp.pl", "onet.pl", "seznam.cz", "gmail.com"},
		given: parts("Łukasz", "lukasz", "Małgorzata", "malgorzata", "Wojciech", "wojciech", "Zofia", "zofia",
			"Paweł", "pawel", "Jiří", "jiri", "Zdeněk", "zdenek", "Dorota", "dorota"),
		family: parts("Wałęsa", "walesa", "Kowalski", "kowalski", "Nowak", "nowak", "Wiśniewski", "wisniewski",
			"Łukaszewicz", "lukaszewicz", "Dvořák", "dvorak", "Šimková", "simkova", "Żółtowska", "zoltowska")},
	{weight: 3, sep: " ", domains: []string{"gmail.com", "hotmail.com.tr", "yandex.com.tr"},
		given:  parts("Ayşe", "ayse", "Gökhan", "gokhan", "İlker", "ilker", "Çağla", "cagla", "Mehmet", "mehmet"),
		family: parts("Çelik", "celik", "Şahin", "sahin", "Öztürk", "ozturk", "Yılmaz", "yilmaz", "Doğan", "dogan")},
	{weight: 6, sep: " ", domains: []string{"mail.ru", "yandex.ru", "rambler.ru", "gmail.com"},
		given: parts("Дмитрий", "dmitry", "Ольга", "olga", "Сергей", "sergey", "Наталья", "natalya", "Алексей", "aleksey",
			"Юлия", "yulia", "Фёдор", "fyodor", "Екатерина", "ekaterina"),
		family: parts("Иванов", "ivanov", "Смирнова", "smirnova", "Кузнецов", "kuznetsov", "Попова", "popova",
			"Соколов", "sokolov", "Лебедева", "lebedeva", "Шевчук", "shevchuk")},
	{weight: 2, sep: " ", domains: []string{"otenet.gr", "gmail.com", "yahoo.gr"},
		given:  parts("Γιώργος", "giorgos", "Ελένη", "eleni", "Νίκος", "nikos", "Μαρία", "maria", "Δημήτρης", "dimitris"),
		family: parts("Παπαδόπουλος", "papadopoulos", "Νικολάου", "nikolaou", "Γεωργίου", "georgiou", "Οικονόμου", "oikonomou")},
	{weight: 5, sep: " ", familyFirst: true, domains: []string{"yahoo.co.jp", "docomo.ne.jp", "ezweb.ne.jp", "gmail.com"},
		given:  parts("陽翔", "haruto", "さくら", "sakura", "結衣", "yui", "蓮", "ren", "美咲", "misaki", "大輝", "daiki"),
		family: parts("佐藤", "sato", "鈴木", "suzuki", "高橋", "takahashi", "田中", "tanaka", "渡辺", "watanabe", "伊藤", "ito")},
	{weight: 5, sep: "", familyFirst: true, domains: []string{"qq.com", "163.com", "126.com", "sina.com"},
		given:  parts("伟", "wei", "芳", "fang", "秀英", "xiuying", "浩然", "haoran", "静", "jing", "子涵", "zihan"),
		family: parts("王", "wang", "李", "li", "张", "zhang", "刘", "liu", "陈", "chen", "欧阳", "ouyang")},
	{weight: 2, sep: " ", familyFirst: true, domains: []string{"naver.com", "daum.net", "gmail.com"},
		given:  parts("민준", "minjun", "서연", "seoyeon", "지호", "jiho", "하은", "haeun"),
		family: parts("김", "kim", "이", "lee", "박", "park", "최", "choi")},
	{weight: 2, sep: " ", familyFirst: true, domains: []string{"gmail.com", "yahoo.com.vn"},
		given:  parts("Văn Minh", "minh", "Thị Lan", "lan", "Quốc Bảo", "bao", "Ngọc Ánh", "anh"),
		family: parts("Nguyễn", "nguyen", "Trần", "tran", "Lê", "le", "Phạm", "pham")},
	{weight: 2, sep: " ", domains: []string{"gmail.com", "hotmail.com", "yahoo.com"},
		given:  parts("محمد", "mohammed", "فاطمة", "fatima", "أحمد", "ahmed", "ليلى", "layla"),
		family: parts("العلي", "alali", "حداد", "haddad", "الخطيب", "alkhatib")},
}

// annNames replace the given name of about one user in 200.
var annNames = parts("Anna", "anna", "Joanna", "joanna", "Hannah", "hannah", "Annika", "annika", "Anneliese", "anneliese")

// nicknames are quoted inside a few names (Robert "Bobby" Smith): a quote JSON escapes.
var nicknames = []string{"Bobby", "Kiki", "Sasha", "Jojo", "Ace", "Doc"}

// emailTags follow a '+' in plus-addressed e-mails.
var emailTags = []string{"shop", "newsletter", "bench", "2024", "spam", "work", "orders"}

// workDomains are the long addresses of employers and universities.
var workDomains = []string{
	"eu-west.mail.globex-industries.example", "cs.uni-heidelberg.de", "student.ethz.ch",
	"research.university-of-somewhere.ac.uk", "initech.com", "umbrella-logistics.co.jp", "acme.io",
}

// Post and comment words: mostly English, with the loanwords, places and emoji real
// text has.
var (
	titleWords = []string{
		"notes", "on", "the", "quiet", "art", "of", "shipping", "small", "changes", "weekly",
		"update", "why", "we", "moved", "to", "a", "single", "store", "lessons", "from",
		"review", "first", "steps", "with", "graphs", "and", "queries", "in", "practice", "today",
	}
	// foreignWords are one word in 25 of titles and texts.
	foreignWords = []string{
		"café", "naïve", "résumé", "Zürich", "Kraków", "São Paulo", "Москва", "東京", "北京", "Αθήνα",
		"über", "déjà vu", "smörgåsbord", "jalapeño", "façade", "🚀", "“async”", "O'Reilly's", "👍", "😀",
	}
	contentWords = append([]string{
		"it", "is", "was", "not", "but", "this", "that", "for", "our", "team", "service", "data",
		"memory", "latency", "users", "orders", "after", "before", "every", "week", "took", "seconds",
		"really", "simple", "hard", "again", "test", "tests", "code", "review", "fixed", "broke",
		"coffee", "weekend", "trip", "photos", "recipe", "garden", "train", "I'd", "don't",
	}, titleWords...)
	commentTexts = []string{
		"Nice write-up.", "Thanks for sharing!", "I disagree with the second point.", "Great read.",
		"Could you expand on this?", "This helped me a lot.", "Typo in the third paragraph.", "+1",
		"Très bien !", "Danke schön!", "Спасибо!", "ありがとうございます！", "谢谢分享", "👍", "Ευχαριστώ!",
		`I'd say "it depends".`, "Same here — ran into this last week.", "¿Y en producción?", "Ok",
	}
	// codeLines go into a few posts: a tab, quotes and backslashes, as pasted code has.
	codeLines = []string{
		"\tfmt.Println(\"héllo, wörld\")",
		"\tpath := `C:\\Users\\renée\\data.json`",
		"\tif err != nil {\n\t\treturn err\n\t}",
		"\tprintf(\"%s\\n\", name);",
	}
)

// Products: a category's nouns, with the adjectives and brands any category takes.
type category struct {
	name   string
	weight int
	nouns  []string
}

var (
	categories = []category{
		{"Electronics", 20, []string{"Laptop", "Camera", "Speaker", "Monitor", "Keyboard", "Mouse", "Router", "Headset", "Tablet", "Printer"}},
		{"Home", 15, []string{"Lamp", "Chair", "Desk", "Heater", "Fan", "Futon", "Tatami Mat", "Duvet", "Kids' Bunk Bed"}},
		{"Kitchen", 15, []string{"Kettle", "Blender", "Toaster", "Skillet", "Moka Pot", "Crêpe Pan", "Fondue Set", "Chef's Knife", "Matcha Whisk 茶筅", "Samovar"}},
		{"Garden", 8, []string{"Hose", "Rake", "Planter", "Hammock", "Grill", "Bird Feeder"}},
		{"Books", 10, []string{"Novel", "Atlas", "Cookbook", "Phrasebook", "Manga 漫画", "Poetry Collection"}},
		{"Toys", 8, []string{"Puzzle", "Kite", "Piñata", "Model Train", "Plush Bear", "Building Set"}},
		{"Sports", 8, []string{"Bicycle", "Tent", "Backpack", "Yoga Mat", "Ski Goggles", "Men's Running Shoes", "Women's Running Shoes"}},
		{"Office", 6, []string{"Scanner", "Stapler", "Notebook", "Fountain Pen", "Whiteboard", `15" Laptop Sleeve`}},
		{"Health & Beauty", 5, []string{"Toothbrush", "Hair Dryer", "Face Cream", "Shaver"}},
		{"Pet Supplies", 5, []string{"Dog Bed", "Cat Tree", "Aquarium", "Leash"}},
	}
	adjectives = []string{
		"Compact", "Deluxe", "Classic", "Smart", "Portable", "Quiet", "Rugged", "Slim", "Solar", "Wireless",
		"Digital", "Vintage", "Modern", "Ultra", "Eco", "Heavy-Duty", "Light", "Mini", "Grand", "Swift",
		"Crème", "Nordic", "Édition Spéciale", "Ergonomic",
	}
	brands = []string{"Acme", "Møller", "Sakura", "Zephyr", "Kraftwerk", "Élan", "Łódź Works", "Nordlys", "Hōkō", "Bärenstark"}
	// proSuffix is the only word with "pro" in it (see the top of this file).
	proSuffix = "Pro"
	// priceEndings are the cents of most prices: .99 above all.
	priceEndings = []int{99, 99, 99, 99, 49, 95, 0, 0, 50}
)
