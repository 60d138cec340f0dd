package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"quartet/graphql"
)

// TestGraphQLCommentAuthorDeletedMidQuery: The author of a comment is
// deleted after the comment was read and before its author is resolved (here by the
// resolver of a field resolved in between); the comment still answers with the author
// it was read with, not an internal error.
func TestGraphQLCommentAuthorDeletedMidQuery(t *testing.T) {
	store := newTestStore(t)
	schema := newGraphQLSchema(store, nil, slog.New(slog.DiscardHandler), 12)
	schema.SetResolver("Comment", "text", func(p graphql.ResolveParams) (any, error) {
		c := p.Source.(*AuthoredComment)
		if _, err := store.DeleteUser(c.AuthorID); err != nil {
			return nil, err
		}
		return c.Text, nil
	})
	resp := schema.Execute(t.Context(), graphql.Request{Query: `{ post(id: 1) { comments { id text author { id name } } } }`})
	if len(resp.Errors) > 0 {
		t.Fatalf("errors: %v", resp.Errors)
	}
	var got struct {
		Post struct {
			Comments []struct {
				ID     int
				Author *struct{ ID int }
			}
		}
	}
	if err := json.Unmarshal(resp.Data, &got); err != nil || len(got.Post.Comments) != 2 || got.Post.Comments[0].Author == nil || got.Post.Comments[0].Author.ID != 2 {
		t.Fatalf("data %s: %v", resp.Data, err)
	}
	if _, ok := store.User(2); ok {
		t.Fatal("the author was not deleted mid-query")
	}
}

// TestGraphQLReadsRaceDeletes: Readers of comments and their authors run
// while writers create and delete users with posts and comments; every read answers
// data without errors.
func TestGraphQLReadsRaceDeletes(t *testing.T) {
	store := newTestStore(t)
	logs := &syncBuffer{}
	schema := newGraphQLSchema(store, nil, slog.New(slog.NewTextHandler(logs, nil)), 12)
	const writers, rounds = 2, 150
	done := make(chan struct{})
	var wg sync.WaitGroup
	var writing sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			for i := range rounds {
				u, err := store.CreateUser(fmt.Sprintf("Racer %d", w), fmt.Sprintf("r%d.%d@example.com", w, i))
				if err != nil {
					t.Error(err)
					return
				}
				p, err := store.CreatePost(u.ID, "Doomed", "Soon gone.")
				if err != nil {
					t.Error(err)
					return
				}
				for range 3 {
					if _, err := store.AddComment(p.ID, u.ID, "Mine."); err != nil {
						t.Error(err)
						return
					}
					if _, err := store.AddComment(1, u.ID, "On an old post."); err != nil {
						t.Error(err)
						return
					}
				}
				store.DeleteUser(u.ID)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				resp := schema.Execute(t.Context(), graphql.Request{Query: `{ posts { id comments { id author { id name } } } }`})
				if len(resp.Errors) > 0 || string(resp.Data) == "null" {
					t.Errorf("errors %v, data %s", resp.Errors, resp.Data)
					return
				}
			}
		})
	}
	writing.Wait()
	close(done)
	wg.Wait()
	if strings.Contains(logs.String(), "resolver failed") {
		t.Errorf("a resolver failed:\n%s", logs)
	}
}

// TestGraphQLInternalErrorsAreGeneric: A resolver error that is not a
// domain error reaches the client as "internal server error" with code
// INTERNAL_SERVER_ERROR, and its text reaches the log only.
func TestGraphQLInternalErrorsAreGeneric(t *testing.T) {
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	schema := newGraphQLSchema(newTestStore(t), nil, log, 12)
	resolverGuard{schema, log}.SetResolver("Query", "users", func(graphql.ResolveParams) (any, error) {
		return nil, errors.New("open /secret/path: input/output error")
	})
	resolverGuard{schema, log}.SetResolver("Query", "user", func(graphql.ResolveParams) (any, error) {
		return nil, notFound("user 5 not found")
	})
	resp := schema.Execute(t.Context(), graphql.Request{Query: `{ users { id } }`})
	body, _ := json.Marshal(resp)
	if len(resp.Errors) != 1 || resp.Errors[0].Message != "internal server error" ||
		resp.Errors[0].Extensions["code"] != "INTERNAL_SERVER_ERROR" || strings.Contains(string(body), "secret") {
		t.Errorf("response %s", body)
	}
	if !strings.Contains(logs.String(), "/secret/path") || !strings.Contains(logs.String(), "field=Query.users") {
		t.Errorf("the error was not logged:\n%s", logs)
	}
	resp = schema.Execute(t.Context(), graphql.Request{Query: `{ user(id: 5) { id } }`})
	if len(resp.Errors) != 1 || resp.Errors[0].Message != "user 5 not found" || resp.Errors[0].Extensions["code"] != "NOT_FOUND" {
		body, _ := json.Marshal(resp)
		t.Errorf("a domain error is answered as it is: %s", body)
	}
}

// TestODataReadsRaceRESTOrders: OData reads that expand, filter through and count a
// product's orders run while orders are placed over REST; every read is a whole
// answer whose count agrees with the orders it lists, and the orders only grow.
func TestODataReadsRaceRESTOrders(t *testing.T) {
	ts := newTestServer(t, newTestStore(t))
	read := func() int {
		resp, body := send(t, "GET", ts.URL+"/api/products?$filter=id%20eq%201%20and%20orders/any(o:o/quantity%20ge%201)&$expand=orders($count=true;$select=id,quantity)&$select=id", "", nil)
		var answer struct {
			Value []struct {
				Count  int `json:"orders@odata.count"`
				Orders []struct{ ID, Quantity int }
			}
		}
		if err := json.Unmarshal([]byte(body), &answer); resp.StatusCode != 200 || err != nil || len(answer.Value) != 1 {
			t.Fatalf("%d %v: %s", resp.StatusCode, err, body)
		}
		if got := answer.Value[0]; got.Count != len(got.Orders) {
			t.Fatalf("count %d with %d orders: %s", got.Count, len(got.Orders), body)
		}
		return len(answer.Value[0].Orders)
	}
	const placed = 40
	first, done := read(), make(chan struct{})
	go func() {
		defer close(done)
		for range placed {
			resp, body := send(t, "POST", ts.URL+"/api/users/2/orders", `{"productId":1,"quantity":3}`, map[string]string{"Content-Type": "application/json"})
			if resp.StatusCode != 201 {
				t.Errorf("order: %d %s", resp.StatusCode, body)
				return
			}
		}
	}()
	last := first
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true // one more read, of every order placed
		default:
		}
		n := read()
		if n < last {
			t.Fatalf("%d orders after %d", n, last)
		}
		last = n
	}
	if last != first+placed {
		t.Errorf("%d orders at the end, want %d and %d more", last, first, placed)
	}
}
