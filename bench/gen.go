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
	"unicode"
	"unicode/utf8"
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

// genEpoch is the creation time of record 0; later records are a little later.
var genEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// The records as the dataset file spells them (docs/data.md). Price is a JSON
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
	g.enc.SetEscapeHTML(false) // "Health & Beauty" as a person would write it

	g.open("users")
	r := rng(1)
	names := make([]string, cfg.Users) // orders copy the user's name
	for i := range cfg.Users {
		id := int64(i + 1)
		p := newPerson(r)
		names[i] = p.name
		g.record(genUser{ID: id, Name: p.name, Email: p.email(r, id), CreatedAt: genEpoch.Add(time.Duration(id) * 37 * time.Second)})
	}

	g.open("posts")
	r = rng(2)
	posts := int64(0)
	for u := range cfg.Users {
		for range cfg.PostsPerUser {
			posts++
			g.record(genPost{
				ID: posts, UserID: int64(u + 1),
				Title:     title(r),
				Content:   paragraphs(r, 1+r.IntN(3), 12, true), // under 20 kB
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
				Text:      commentText(r),
				CreatedAt: genEpoch.Add(time.Duration(comments) * 61 * time.Second),
			})
		}
	}

	g.open("products")
	r = rng(4)
	for i := range cfg.Products {
		id := int64(i + 1)
		name, cat := productName(r)
		g.record(genProduct{
			ID: id, Name: name,
			Price:       price(r),
			Category:    cat,
			CreatedDate: genEpoch.Add(time.Duration(id) * time.Hour),
			IsActive:    r.IntN(10) != 0,
		})
	}

	g.open("orders")
	r = rng(5)
	for i := range cfg.Orders {
		// A few products sell most (the cube of a uniform draw favours low ids), and
		// so do a few customers (its square).
		o := genOrder{
			ID: int64(i + 1), ProductID: skewedID(r, cfg.Products, 3),
			OrderDate: genEpoch.Add(time.Duration(i+1) * 17 * time.Minute),
			Quantity:  quantity(r),
		}
		switch {
		case cfg.Users > 0 && r.IntN(10) != 0:
			o.UserID = skewedID(r, cfg.Users, 2)
			o.CustomerName = names[o.UserID-1]
			if r.IntN(20) == 0 { // a gift: delivered to someone else
				o.CustomerName = newPerson(r).name
			}
		default: // a guest checkout: no account
			o.CustomerName = newPerson(r).name
		}
		g.record(o)
	}
	g.close()
	return g.err
}

// The service's limits (model.go) that generated records keep within, so
// that every record would also pass the create paths.
const (
	maxNameRunes         = 100
	maxEmailBytes        = 254
	maxTitleRunes        = 200
	maxContentBytes      = 100_000
	maxCommentBytes      = 10_000
	maxGeneratedQuantity = 50
)

// person is a generated user: the name as shown, and the ASCII parts an e-mail
// address is made of.
type person struct {
	name          string
	given, family string // ASCII, lower case
	domains       []string
}

// newPerson draws a name: a region by its weight, then a given and a family name
// in that region's order. A few names are longer (a middle initial, a second family
// name, several given names), and a very few hold a quoted nickname or, as names
// exported from a directory do, a backslash.
func newPerson(r *rand.Rand) person {
	st := pickStyle(r)
	given, family := st.given[r.IntN(len(st.given))], st.family[r.IntN(len(st.family))]
	if r.IntN(200) == 0 {
		given = annNames[r.IntN(len(annNames))]
	}
	p := person{given: given.ascii, family: family.ascii, domains: st.domains}
	g, f := given.text, family.text
	if !st.familyFirst {
		switch n := r.IntN(100); {
		case n < 8:
			g += " " + string(rune('A'+r.IntN(26))) + "."
		case n < 13:
			f += "-" + st.family[r.IntN(len(st.family))].text
		case n < 14: // a long name: two given names and three family names
			g += " " + st.given[r.IntN(len(st.given))].text
			f += " " + st.family[r.IntN(len(st.family))].text + " y " + st.family[r.IntN(len(st.family))].text
		}
	}
	switch r.IntN(10_000) {
	case 0, 1, 2, 3, 4:
		p.name = g + ` "` + nicknames[r.IntN(len(nicknames))] + `" ` + f
	case 5:
		p.name = f + `\` + g
	default:
		if st.familyFirst {
			p.name = f + st.sep + g
		} else {
			p.name = g + " " + f
		}
	}
	if utf8.RuneCountInString(p.name) > maxNameRunes {
		p.name = given.text + " " + family.text
	}
	return p
}

func pickStyle(r *rand.Rand) *nameStyle {
	n := r.IntN(totalStyleWeight)
	for i := range nameStyles {
		if n -= nameStyles[i].weight; n < 0 {
			return &nameStyles[i]
		}
	}
	panic("unreachable")
}

var totalStyleWeight = func() int {
	t := 0
	for _, s := range nameStyles {
		t += s.weight
	}
	return t
}()

// email draws an address for p: the usual given.family@provider, initials, birth
// years, plus-addressing, very short ones, and long work addresses.
func (p person) email(r *rand.Rand, id int64) string {
	g, f := p.given, p.family
	domain := p.domains[r.IntN(len(p.domains))]
	var local string
	switch n := r.IntN(100); {
	case n < 30:
		local = g + "." + f
	case n < 42:
		local = g[:1] + f
	case n < 57:
		local = g + "_" + f + strconv.Itoa(1950+r.IntN(56))
	case n < 67:
		local = g + "." + f + "+" + emailTags[r.IntN(len(emailTags))]
	case n < 75:
		local = g + strconv.FormatInt(id, 10)
	case n < 80: // short: the given name at a short domain
		local, domain = g, "acme.io"
	case n < 90:
		local = f + "." + g + strconv.FormatInt(id%1000, 10)
	default: // long: a work address with a department
		local = g + "." + string(rune('a'+r.IntN(26))) + "." + f + ".accounts-payable"
		domain = workDomains[r.IntN(len(workDomains))]
	}
	return local + "@" + domain
}

// title is a post title of 2 to 13 words, now and then a question.
func title(r *rand.Rand) string {
	t := sentence(r, titleWords, 2+r.IntN(5)+r.IntN(8))
	if r.IntN(10) == 0 {
		t += "?"
	}
	return t
}

// paragraphs is between min and max paragraphs of text, each one after min with a
// chance of one in two; with code set, one text in 40 also shows a few lines of code
// (tabs, quotes, backslashes). A paragraph is at most about 1,500 bytes.
func paragraphs(r *rand.Rand, min, max int, code bool) string {
	n := min
	for n < max && r.IntN(2) == 0 {
		n++
	}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("\n\n")
		}
		for j := range 1 + r.IntN(5) {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(sentence(r, contentWords, 4+r.IntN(17)))
			b.WriteByte('.')
		}
		if code && i == 0 && r.IntN(40) == 0 {
			b.WriteString("\n\n" + codeLines[r.IntN(len(codeLines))])
		}
	}
	return b.String()
}

// commentText is mostly a stock phrase, sometimes a sentence, now and then a few
// paragraphs.
func commentText(r *rand.Rand) string {
	switch n := r.IntN(100); {
	case n < 70:
		return commentTexts[r.IntN(len(commentTexts))]
	case n < 95:
		return sentence(r, contentWords, 5+r.IntN(21)) + "."
	default:
		return paragraphs(r, 2, 4, false) // under 7 kB
	}
}

// sentence returns n words from words, one in 25 from foreignWords instead, the
// first capitalised.
func sentence(r *rand.Rand, words []string, n int) string {
	var b strings.Builder
	for i := range n {
		w := words[r.IntN(len(words))]
		if r.IntN(25) == 0 {
			w = foreignWords[r.IntN(len(foreignWords))]
		}
		if i == 0 {
			first, size := utf8.DecodeRuneInString(w)
			w = string(unicode.ToUpper(first)) + w[size:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// productName draws a category by its weight and a name from its nouns: maybe a
// brand, maybe an adjective, the noun, one in ten a "Pro", mostly a model number.
func productName(r *rand.Rand) (name, category string) {
	total := 0
	for _, c := range categories {
		total += c.weight
	}
	n := r.IntN(total)
	c := &categories[0]
	for i := range categories {
		if n -= categories[i].weight; n < 0 {
			c = &categories[i]
			break
		}
	}
	var words []string
	if r.IntN(10) < 4 {
		words = append(words, brands[r.IntN(len(brands))])
	}
	if r.IntN(10) < 7 {
		words = append(words, adjectives[r.IntN(len(adjectives))])
	}
	words = append(words, c.nouns[r.IntN(len(c.nouns))])
	if r.IntN(10) == 0 {
		words = append(words, proSuffix)
	}
	if r.IntN(10) < 7 {
		words = append(words, strconv.Itoa(100+r.IntN(900)))
	}
	return strings.Join(words, " "), c.name
}

// price is skewed as shop prices are: a third under 20, about a quarter over 500
// (which the OData filter's selectivity counts on), a few in the thousands; most end
// in .99.
func price(r *rand.Rand) json.Number {
	var dollars int
	switch n := r.IntN(100); {
	case n < 35:
		dollars = 1 + r.IntN(19)
	case n < 58:
		dollars = 20 + r.IntN(80)
	case n < 76:
		dollars = 100 + r.IntN(400)
	case n < 94:
		dollars = 500 + r.IntN(1000)
	default:
		dollars = 1500 + r.IntN(3500)
	}
	return json.Number(fmt.Sprintf("%d.%02d", dollars, priceEndings[r.IntN(len(priceEndings))]))
}

// quantity is mostly 1, rarely up to maxGeneratedQuantity.
func quantity(r *rand.Rand) int64 {
	switch n := r.IntN(100); {
	case n < 70:
		return 1
	case n < 90:
		return 2
	case n < 97:
		return int64(3 + r.IntN(3))
	default:
		return int64(6 + r.IntN(maxGeneratedQuantity-5))
	}
}

// skewedID draws an id in 1..n, favouring low ids more the larger power is.
func skewedID(r *rand.Rand, n, power int) int64 {
	u := r.Float64()
	x := u
	for range power - 1 {
		x *= u
	}
	return int64(x*float64(n)) + 1
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
