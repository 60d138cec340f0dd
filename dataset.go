package main

import (
	"bytes"
	_ "embed"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"syscall"

	"quartet/internal/jsonscan"
)

// Dataset is the file format of -load (docs/data.md) and of the embedded demo
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
	if f, ok := r.(*os.File); ok {
		if data, unmap, ok := mapFile(f); ok {
			defer unmap()
			return decodeMapped(data)
		}
	}
	data, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return decodeInput(data)
}

// decodeInput decodes a whole dataset file's contents.
func decodeInput(data []byte) (*Dataset, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty input: expected a JSON object")
	}
	return decodeDataset(data)
}

// decodeMapped decodes a mapped file (mapFile). The decoded values are copies, so
// none refers to data once it is unmapped. If the file shrinks meanwhile, reading a
// page past its new end faults: that becomes an error here instead of a crash (the
// decoding's other goroutines let such a fault go, see jsonscan.List).
func decodeMapped(data []byte) (ds *Dataset, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !jsonscan.IsMemoryFault(r) {
				panic(r)
			}
			ds, err = nil, errors.New("the file changed while it was read")
		}
	}()
	return decodeInput(data)
}

// mapFile maps the regular file f, read from its start, into memory read-only. A
// large dataset is then read straight from the system's file cache: reading it into
// a fresh buffer first touched 150 MB of new memory, a sixth of start-up
// (bench/README.md, "Start-up and memory"). ok is false where f cannot be mapped;
// read it then. Until unmap, a fault reading data means the file shrank meanwhile (see
// decodeMapped).
func mapFile(f *os.File) (data []byte, unmap func(), ok bool) {
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 || info.Size() != int64(int(info.Size())) {
		return nil, nil, false
	}
	if at, err := f.Seek(0, io.SeekCurrent); err != nil || at != 0 {
		return nil, nil, false
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return data, func() { syscall.Munmap(data) }, true
}

// readAll reads r to the end. A file is read into a buffer of its size: io.ReadAll
// would grow its buffer step by step, clearing and copying a large file several times.
func readAll(r io.Reader) ([]byte, error) {
	f, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return io.ReadAll(r)
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+bytes.MinRead))
	_, err = buf.ReadFrom(r)
	return buf.Bytes(), err
}

// decodeDataset reads the dataset format with package jsonscan, which accepts what
// encoding/json would decode into a Dataset with unknown fields disallowed, and
// refuses a key repeated in one object and a string with an unpaired surrogate escape
// (TestDecodeDatasetMatchesEncodingJSON). It pays for itself at start-up: with
// encoding/json the start-up target is missed (bench/README.md, "Tricks measured
// against the standard library").
func decodeDataset(data []byte) (*Dataset, error) {
	d := jsonscan.New(data, "dataset")
	var ds Dataset
	err := d.Object(jsonscan.Loc{}, datasetFields, func(name string) error {
		switch name {
		case "users":
			return jsonscan.List(d, "users", &ds.Users, decodeUser)
		case "posts":
			return jsonscan.List(d, "posts", &ds.Posts, decodePost)
		case "comments":
			return jsonscan.List(d, "comments", &ds.Comments, decodeComment)
		case "products":
			return jsonscan.List(d, "products", &ds.Products, decodeProduct)
		case "orders":
			return jsonscan.List(d, "orders", &ds.Orders, decodeOrder)
		}
		return nil // not reached: Object passes only the names in fields
	})
	if err == nil {
		err = d.End()
	}
	if err != nil {
		return nil, err
	}
	return &ds, nil
}

// The keys of each object, as the JSON tags spell them.
var (
	datasetFields = []string{"users", "posts", "comments", "products", "orders"}
	userFields    = []string{"id", "name", "email", "createdAt"}
	postFields    = []string{"id", "userId", "title", "content", "createdAt"}
	commentFields = []string{"id", "postId", "authorId", "text", "createdAt"}
	productFields = []string{"id", "name", "price", "category", "createdDate", "isActive"}
	orderFields   = []string{"id", "userId", "productId", "customerName", "orderDate", "quantity"}
)

func decodeUser(d *jsonscan.Scanner, at jsonscan.Loc, u *User) error {
	return d.Object(at, userFields, func(name string) error {
		switch name {
		case "id":
			return d.Int64(at.With("id"), &u.ID)
		case "name":
			return d.String(at.With("name"), &u.Name)
		case "email":
			return d.String(at.With("email"), &u.Email)
		case "createdAt":
			return d.Unmarshal(at.With("createdAt"), &u.CreatedAt)
		}
		return nil // not reached: Object passes only the names in fields
	})
}

func decodePost(d *jsonscan.Scanner, at jsonscan.Loc, p *Post) error {
	return d.Object(at, postFields, func(name string) error {
		switch name {
		case "id":
			return d.Int64(at.With("id"), &p.ID)
		case "userId":
			return d.Int64(at.With("userId"), &p.UserID)
		case "title":
			return d.String(at.With("title"), &p.Title)
		case "content":
			return d.String(at.With("content"), &p.Content)
		case "createdAt":
			return d.Unmarshal(at.With("createdAt"), &p.CreatedAt)
		}
		return nil // not reached: Object passes only the names in fields
	})
}

func decodeComment(d *jsonscan.Scanner, at jsonscan.Loc, c *Comment) error {
	return d.Object(at, commentFields, func(name string) error {
		switch name {
		case "id":
			return d.Int64(at.With("id"), &c.ID)
		case "postId":
			return d.Int64(at.With("postId"), &c.PostID)
		case "authorId":
			return d.Int64(at.With("authorId"), &c.AuthorID)
		case "text":
			return d.String(at.With("text"), &c.Text)
		case "createdAt":
			return d.Unmarshal(at.With("createdAt"), &c.CreatedAt)
		}
		return nil // not reached: Object passes only the names in fields
	})
}

func decodeProduct(d *jsonscan.Scanner, at jsonscan.Loc, p *Product) error {
	return d.Object(at, productFields, func(name string) error {
		switch name {
		case "id":
			return d.Int64(at.With("id"), &p.ID)
		case "name":
			return d.String(at.With("name"), &p.Name)
		case "price":
			return d.Unmarshal(at.With("price"), &p.Price)
		case "category":
			return d.String(at.With("category"), &p.Category)
		case "createdDate":
			return d.Unmarshal(at.With("createdDate"), &p.CreatedDate)
		case "isActive":
			return d.Bool(at.With("isActive"), &p.IsActive)
		}
		return nil // not reached: Object passes only the names in fields
	})
}

func decodeOrder(d *jsonscan.Scanner, at jsonscan.Loc, o *Order) error {
	return d.Object(at, orderFields, func(name string) error {
		switch name {
		case "id":
			return d.Int64(at.With("id"), &o.ID)
		case "userId":
			return d.Int64(at.With("userId"), &o.UserID)
		case "productId":
			return d.Int64(at.With("productId"), &o.ProductID)
		case "customerName":
			return d.String(at.With("customerName"), &o.CustomerName)
		case "orderDate":
			return d.Unmarshal(at.With("orderDate"), &o.OrderDate)
		case "quantity":
			return d.Int64(at.With("quantity"), &o.Quantity)
		}
		return nil // not reached: Object passes only the names in fields
	})
}
