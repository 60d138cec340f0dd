package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// GenConfig sizes a generated dataset. The same config always yields the same bytes.
type GenConfig struct {
	Seed            uint64
	Users           int
	PostsPerUser    int
	CommentsPerPost int
	Products        int
	Orders          int
}

// The word lists are chosen so that the benchmark's filters are selective but never
// empty: only annNames contain "ann" (REST search=ann), and only the product suffix
// proSuffix contains "pro" (OData contains(tolower(name),'pro')). The generator test
// checks that no other word contains either.
var (
	firstNames = []string{
		"Alice", "Bob", "Carol", "David", "Eve", "Frank", "Grace", "Heidi", "Ivan", "Judy",
		"Karl", "Laura", "Mallory", "Niaj", "Olivia", "Peggy", "Quentin", "Rupert", "Sybil", "Trent",
		"Ursula", "Victor", "Walter", "Xavier", "Yvonne", "Zach", "Amir", "Beatrice", "Chen", "Dmitri",
		"Elena", "Farid", "Gustav", "Hiro", "Ingrid", "Jamal", "Kofi", "Lucia", "Mateo", "Nadia",
		"Oscar", "Priya", "Rosa", "Sofia", "Tomas", "Uma", "Vera", "Wen", "Yusuf", "Zoe",
	}
	annNames  = []string{"Anna", "Joanna", "Hannah", "Annika"}
	lastNames = []string{
		"Smith", "Jones", "Garcia", "Miller", "Davis", "Lopez", "Wilson", "Moore", "Taylor", "Thomas",
		"Jackson", "White", "Harris", "Martin", "Thompson", "Clark", "Lewis", "Lee", "Walker", "Hall",
		"Young", "King", "Wright", "Scott", "Green", "Baker", "Adams", "Nelson", "Hill", "Campbell",
		"Mitchell", "Roberts", "Carter", "Phillips", "Evans", "Turner", "Torres", "Parker", "Collins", "Edwards",
		"Stewart", "Morris", "Murphy", "Cook", "Rogers", "Morgan", "Cooper", "Peterson", "Reed", "Bailey",
	}
	emailDomains = []string{"example.com", "example.org", "mail.test", "corp.test"}

	adjectives = []string{
		"Compact", "Deluxe", "Classic", "Smart", "Portable", "Quiet", "Rugged", "Slim", "Solar", "Wireless",
		"Digital", "Vintage", "Modern", "Ultra", "Eco", "Heavy", "Light", "Mini", "Grand", "Swift",
	}
	nouns = []string{
		"Laptop", "Kettle", "Lamp", "Chair", "Desk", "Camera", "Speaker", "Blender", "Drill", "Backpack",
		"Monitor", "Keyboard", "Mouse", "Router", "Heater", "Fan", "Toaster", "Tent", "Bicycle", "Watch",
		"Headset", "Tablet", "Printer", "Scanner", "Guitar", "Novel", "Atlas", "Puzzle", "Kite", "Skillet",
	}
	proSuffix  = "Pro"
	categories = []string{"Electronics", "Home", "Garden", "Books", "Toys", "Sports", "Kitchen", "Office"}

	titleWords = []string{
		"notes", "on", "the", "quiet", "art", "of", "shipping", "small", "changes", "weekly",
		"update", "why", "we", "moved", "to", "a", "single", "store", "lessons", "from",
		"review", "first", "steps", "with", "graphs", "and", "queries", "in", "practice", "today",
	}
	commentTexts = []string{
		"Nice write-up.", "Thanks for sharing!", "I disagree with the second point.", "Great read.",
		"Could you expand on this?", "This helped me a lot.", "Typo in the third paragraph.", "+1",
	}
)

// genEpoch is the creation time of record 0; later records are a little later.
var genEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// The records as the dataset file spells them (CONTRACT.md section 7). Price is a JSON
// number written from integer cents, so it is exact.
type (
	genUser struct {
		ID        int64     `json:"id"`
		Name      string    `json:"name"`
		Email     string    `json:"email"`
		CreatedAt time.Time `json:"createdAt"`
	}
	genPost struct {
		ID        int64     `json:"id"`
		UserID    int64     `json:"userId"`
		Title     string    `json:"title"`
		Content   string    `json:"content"`
		CreatedAt time.Time `json:"createdAt"`
	}
	genComment struct {
		ID        int64     `json:"id"`
		PostID    int64     `json:"postId"`
		AuthorID  int64     `json:"authorId"`
		Text      string    `json:"text"`
		CreatedAt time.Time `json:"createdAt"`
	}
	genProduct struct {
		ID          int64       `json:"id"`
		Name        string      `json:"name"`
		Price       json.Number `json:"price"`
		Category    string      `json:"category"`
		CreatedDate time.Time   `json:"createdDate"`
		IsActive    bool        `json:"isActive"`
	}
	genOrder struct {
		ID           int64     `json:"id"`
		UserID       int64     `json:"userId,omitempty"`
		ProductID    int64     `json:"productId"`
		CustomerName string    `json:"customerName"`
		OrderDate    time.Time `json:"orderDate"`
		Quantity     int64     `json:"quantity"`
	}
)

// Generate writes the dataset cfg describes to w. Ids run from 1 in every collection;
// every reference resolves, so the service loads the file as it is.
func Generate(w io.Writer, cfg GenConfig) error {
	if cfg.Users < 0 || cfg.PostsPerUser < 0 || cfg.CommentsPerPost < 0 || cfg.Products < 0 || cfg.Orders < 0 {
		return errors.New("dataset sizes must not be negative")
	}
	if cfg.Orders > 0 && cfg.Products == 0 {
		return errors.New("orders need at least one product")
	}
	// One stream per collection, so changing one size leaves the others' records as
	// they were.
	rng := func(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(cfg.Seed, stream)) }
	g := &genWriter{w: bufio.NewWriterSize(w, 1<<20)}
	g.enc = json.NewEncoder(g.w)

	g.open("users")
	r := rng(1)
	names := make([]string, cfg.Users) // orders copy the user's name
	for i := range cfg.Users {
		first := firstNames[r.IntN(len(firstNames))]
		if r.IntN(200) == 0 {
			first = annNames[r.IntN(len(annNames))]
		}
		last := lastNames[r.IntN(len(lastNames))]
		id := int64(i + 1)
		names[i] = first + " " + last
		email := strings.ToLower(first) + "." + strings.ToLower(last) + strconv.FormatInt(id, 10) + "@" + emailDomains[r.IntN(len(emailDomains))]
		g.record(genUser{ID: id, Name: names[i], Email: email, CreatedAt: genEpoch.Add(time.Duration(id) * 37 * time.Second)})
	}

	g.open("posts")
	r = rng(2)
	posts := int64(0)
	for u := range cfg.Users {
		for range cfg.PostsPerUser {
			posts++
			g.record(genPost{
				ID: posts, UserID: int64(u + 1),
				Title:     sentence(r, 3+r.IntN(4)),
				Content:   sentence(r, 12+r.IntN(12)) + ".",
				CreatedAt: genEpoch.Add(time.Duration(posts) * 53 * time.Second),
			})
		}
	}

	g.open("comments")
	r = rng(3)
	comments := int64(0)
	for p := range posts {
		for range cfg.CommentsPerPost {
			comments++
			g.record(genComment{
				ID: comments, PostID: p + 1, AuthorID: int64(r.IntN(cfg.Users) + 1),
				Text:      commentTexts[r.IntN(len(commentTexts))],
				CreatedAt: genEpoch.Add(time.Duration(comments) * 61 * time.Second),
			})
		}
	}

	g.open("products")
	r = rng(4)
	for i := range cfg.Products {
		name := adjectives[r.IntN(len(adjectives))] + " " + nouns[r.IntN(len(nouns))]
		if r.IntN(30) == 0 {
			name += " " + proSuffix
		}
		name += " " + strconv.Itoa(100+r.IntN(900))
		cents := 100 + r.IntN(200_000) // 1.00 .. 2000.99
		id := int64(i + 1)
		g.record(genProduct{
			ID: id, Name: name,
			Price:       json.Number(fmt.Sprintf("%d.%02d", cents/100, cents%100)),
			Category:    categories[r.IntN(len(categories))],
			CreatedDate: genEpoch.Add(time.Duration(id) * time.Hour),
			IsActive:    r.IntN(10) != 0,
		})
	}

	g.open("orders")
	r = rng(5)
	for i := range cfg.Orders {
		o := genOrder{
			ID: int64(i + 1), ProductID: int64(r.IntN(cfg.Products) + 1),
			OrderDate: genEpoch.Add(time.Duration(i+1) * 17 * time.Minute),
			Quantity:  int64(1 + r.IntN(5)),
		}
		if cfg.Users > 0 && r.IntN(10) != 0 {
			o.UserID = int64(r.IntN(cfg.Users) + 1)
			o.CustomerName = names[o.UserID-1]
		} else {
			o.CustomerName = "Walk-in " + strconv.Itoa(i+1)
		}
		g.record(o)
	}
	g.close()
	return g.err
}

// sentence returns n words from the title word list, the first capitalised.
func sentence(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		w := titleWords[r.IntN(len(titleWords))]
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// genWriter writes a dataset object one record per line, remembering the first error.
type genWriter struct {
	w     *bufio.Writer
	enc   *json.Encoder
	first bool // no record yet in the open collection
	open1 bool // a collection has been opened
	err   error
}

func (g *genWriter) open(key string) {
	sep := "{"
	if g.open1 {
		sep = "],"
	}
	g.open1, g.first = true, true
	g.write(sep + "\n" + strconv.Quote(key) + ":[\n")
}

func (g *genWriter) record(v any) {
	if g.err != nil {
		return
	}
	if !g.first {
		g.write(",")
	}
	g.first = false
	if err := g.enc.Encode(v); err != nil {
		g.err = err
	}
}

func (g *genWriter) close() {
	g.write("]}\n")
	if g.err == nil {
		g.err = g.w.Flush()
	}
}

func (g *genWriter) write(s string) {
	if g.err == nil {
		_, g.err = g.w.WriteString(s)
	}
}
