package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Dataset is the file format of -load (CONTRACT.md section 7) and of the embedded demo
// data. Every key is optional.
type Dataset struct {
	Users    []User    `json:"users"`
	Posts    []Post    `json:"posts"`
	Comments []Comment `json:"comments"`
	Products []Product `json:"products"`
	Orders   []Order   `json:"orders"`
}

//go:embed demo.json
var demoJSON []byte

// DemoDataset returns the embedded demo data.
func DemoDataset() *Dataset {
	ds, err := ReadDataset(bytes.NewReader(demoJSON))
	if err != nil {
		panic("demo.json: " + err.Error()) // the embedded file is tested; this is a build defect
	}
	return ds
}

// ReadDataset decodes a dataset. Unknown keys are refused, so a misspelt collection or
// field is reported instead of silently ignored.
func ReadDataset(r io.Reader) (*Dataset, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty input: expected a JSON object")
	}
	return decodeDataset(data)
}

// describeJSONError turns a decoding error into one line that says where.
func describeJSONError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Errorf("%s must be %s, not %s (byte %d)", typ.Field, jsonTypeName(typ.Type.Kind().String()), typ.Value, typ.Offset)
		}
		return fmt.Errorf("expected %s, not %s (byte %d)", jsonTypeName(typ.Type.Kind().String()), typ.Value, typ.Offset)
	case errors.Is(err, io.EOF):
		return errors.New("empty input: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of input")
	}
	return err
}

func jsonTypeName(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"), strings.HasPrefix(goKind, "float"):
		return "a number"
	case goKind == "string":
		return "a string"
	case goKind == "bool":
		return "a boolean"
	case goKind == "slice":
		return "an array"
	case goKind == "struct", goKind == "map":
		return "an object"
	}
	return "of another type"
}

// Load fills an empty store from ds after checking all of it: ids unique and positive
// per collection, references resolving, users valid by the shared rules. A dataset that
// breaks a rule is refused whole, with a message naming the record. Missing times
// default to the time of loading; new ids continue after the largest loaded one.
func (s *Store) Load(ds *Dataset) error {
	at := s.now()
	stamp := func(t time.Time) time.Time {
		if t.IsZero() {
			return at
		}
		return t.UTC()
	}
	var users []*User
	var posts []*Post
	var comments []*Comment
	var products []*Product
	var orders []*Order
	// seen holds the ids of the collections others refer to; users are in userByID.
	seen := map[string]map[int64]bool{"posts": {}, "comments": {}, "products": {}, "orders": {}}
	checkID := func(coll string, i int, id int64, dup bool) error {
		switch {
		case id <= 0:
			return fmt.Errorf("%s[%d]: id must be a positive integer, not %d", coll, i, id)
		case dup:
			return fmt.Errorf("%s[%d] (id %d): duplicate id", coll, i, id)
		}
		return nil
	}
	check := func(coll string, i int, id int64) error {
		if err := checkID(coll, i, id, seen[coll][id]); err != nil {
			return err
		}
		seen[coll][id] = true
		return nil
	}
	userByID := make(map[int64]*User, len(ds.Users))
	for i, u := range ds.Users {
		if err := checkID("users", i, u.ID, userByID[u.ID] != nil); err != nil {
			return err
		}
		name, email, err := validateUser(u.Name, u.Email)
		if err != nil {
			return fmt.Errorf("users[%d] (id %d): %v", i, u.ID, err)
		}
		rec := &User{ID: u.ID, Name: name, Email: email, CreatedAt: stamp(u.CreatedAt)}
		userByID[u.ID] = rec
		users = append(users, rec)
	}
	for i, p := range ds.Posts {
		if err := check("posts", i, p.ID); err != nil {
			return err
		}
		if userByID[p.UserID] == nil {
			return fmt.Errorf("posts[%d] (id %d): userId %d names no user", i, p.ID, p.UserID)
		}
		if strings.TrimSpace(p.Title) == "" {
			return fmt.Errorf("posts[%d] (id %d): title is required", i, p.ID)
		}
		rec := p
		rec.CreatedAt = stamp(p.CreatedAt)
		posts = append(posts, &rec)
	}
	for i, c := range ds.Comments {
		if err := check("comments", i, c.ID); err != nil {
			return err
		}
		if !seen["posts"][c.PostID] {
			return fmt.Errorf("comments[%d] (id %d): postId %d names no post", i, c.ID, c.PostID)
		}
		if userByID[c.AuthorID] == nil {
			return fmt.Errorf("comments[%d] (id %d): authorId %d names no user", i, c.ID, c.AuthorID)
		}
		rec := c
		rec.CreatedAt = stamp(c.CreatedAt)
		comments = append(comments, &rec)
	}
	for i, p := range ds.Products {
		if err := check("products", i, p.ID); err != nil {
			return err
		}
		if strings.TrimSpace(p.Name) == "" {
			return fmt.Errorf("products[%d] (id %d): name is required", i, p.ID)
		}
		if p.Price < 0 {
			return fmt.Errorf("products[%d] (id %d): price must not be negative", i, p.ID)
		}
		rec := p
		rec.CreatedDate = stamp(p.CreatedDate)
		products = append(products, &rec)
	}
	for i, o := range ds.Orders {
		if err := check("orders", i, o.ID); err != nil {
			return err
		}
		if !seen["products"][o.ProductID] {
			return fmt.Errorf("orders[%d] (id %d): productId %d names no product", i, o.ID, o.ProductID)
		}
		if o.UserID != 0 && userByID[o.UserID] == nil {
			return fmt.Errorf("orders[%d] (id %d): userId %d names no user", i, o.ID, o.UserID)
		}
		if o.Quantity < 1 || o.Quantity > maxQuantity {
			return fmt.Errorf("orders[%d] (id %d): quantity must be between 1 and %d", i, o.ID, maxQuantity)
		}
		rec := o
		rec.OrderDate = stamp(o.OrderDate)
		if strings.TrimSpace(rec.CustomerName) == "" && o.UserID != 0 {
			rec.CustomerName = userByID[o.UserID].Name
		}
		orders = append(orders, &rec)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.beginLoad()
	s.restore(&snapshotState{Users: users, Posts: posts, Comments: comments, Products: products, Orders: orders})
	s.endLoad()
	return nil
}
