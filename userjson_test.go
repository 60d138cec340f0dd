package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func checkUserJSON(t *testing.T, u User) {
	t.Helper()
	want, err := json.Marshal(&u)
	if err != nil {
		return // a time encoding/json refuses; the store's times are all in its range
	}
	if got := u.appendJSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("%+v:\ndirect        %s\nencoding/json %s", u, got, want)
	}
}

func TestUserJSONIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, u := range []User{
		{ID: 7, Name: "Ann Lee", Email: "ann@example.com", CreatedAt: at},
		{ID: -1, Name: `<a href="x">&amp;</a> \ back`, Email: "\x00\x01\b\f\n\r\t\x1f\x7f", CreatedAt: at.Add(123456789)},
		{ID: 1 << 62, Name: "caf\xe9 \u2028\u2029 日本 😀", Email: "", CreatedAt: at.In(time.FixedZone("X", -3*3600-1800))},
		{Name: "zero time"},
	} {
		checkUserJSON(t, u)
	}
}

func FuzzUserJSON(f *testing.F) {
	f.Add(int64(7), "Ann Lee", "ann@example.com", int64(1767323045), int64(0), 0)
	f.Add(int64(-5), "<>&\"\\\u2028\xff", "\x00\x1f", int64(-62135596800), int64(999999999), -19800)
	f.Fuzz(func(t *testing.T, id int64, name, email string, sec, nsec int64, offset int) {
		at := time.Unix(sec, nsec).In(time.FixedZone("", offset%86400))
		checkUserJSON(t, User{ID: id, Name: name, Email: email, CreatedAt: at})
	})
}

func TestUserPageJSONIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []pagedResult[*User]{
		{Items: []*User{}, Page: 3, PageSize: 10, TotalItems: 20, TotalPages: 2},
		{Items: []*User{{ID: 1, Name: "Ann", Email: "a@x.io", CreatedAt: at}, {ID: 2, Name: "<b>", Email: "b@x.io", CreatedAt: at}}, Page: 1, PageSize: 2, TotalItems: 9, TotalPages: 5},
	} {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSON(nil, p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("direct %s (%v)\nencoding/json %s", got, err, want)
		}
	}
}
