package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	graphql "github.com/graph-gophers/graphql-go"
	"github.com/graph-gophers/graphql-go/relay"
)

// The graph-gophers peer serves the service's own SDL over the same generated data,
// with resolvers written the way the library's documentation and examples write
// them: a root resolver, one small resolver type per object type, lookups in maps
// indexed at load time, and relay.Handler for the transport.

func graphGophersHandler(sdl string, ds *peerDataset) (http.Handler, error) {
	db := newGQLStore(ds)
	schema, err := graphql.ParseSchema(sdl, &gqlRoot{db: db})
	if err != nil {
		return nil, fmt.Errorf("graph-gophers: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /graphql", &relay.Handler{Schema: schema})
	return mux, nil
}

// gqlStore holds the records with the indexes the resolvers need.
type gqlStore struct {
	mu             sync.RWMutex
	users          map[int32]*genUser
	posts          map[int32]*genPost
	postsByUser    map[int32][]*genPost    // ordered by id
	commentsByPost map[int32][]*genComment // ordered by id
	nextUser       int32
	nextPost       int32
	nextComment    int32
	userSubs       map[chan *userResolver]struct{}
	postSubs       map[chan *postResolver]struct{}
}

func newGQLStore(ds *peerDataset) *gqlStore {
	db := &gqlStore{
		users:          make(map[int32]*genUser, len(ds.Users)),
		posts:          make(map[int32]*genPost, len(ds.Posts)),
		postsByUser:    map[int32][]*genPost{},
		commentsByPost: map[int32][]*genComment{},
		userSubs:       map[chan *userResolver]struct{}{},
		postSubs:       map[chan *postResolver]struct{}{},
	}
	for i := range ds.Users {
		u := &ds.Users[i]
		db.users[int32(u.ID)] = u
		db.nextUser = max(db.nextUser, int32(u.ID))
	}
	for i := range ds.Posts {
		p := &ds.Posts[i]
		db.posts[int32(p.ID)] = p
		db.postsByUser[int32(p.UserID)] = append(db.postsByUser[int32(p.UserID)], p)
		db.nextPost = max(db.nextPost, int32(p.ID))
	}
	for i := range ds.Comments {
		c := &ds.Comments[i]
		db.commentsByPost[int32(c.PostID)] = append(db.commentsByPost[int32(c.PostID)], c)
		db.nextComment = max(db.nextComment, int32(c.ID))
	}
	for _, ps := range db.postsByUser {
		slices.SortFunc(ps, func(a, b *genPost) int { return int(a.ID - b.ID) })
	}
	for _, cs := range db.commentsByPost {
		slices.SortFunc(cs, func(a, b *genComment) int { return int(a.ID - b.ID) })
	}
	return db
}

func (db *gqlStore) user(id int32) *userResolver {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if u := db.users[id]; u != nil {
		return &userResolver{db: db, u: u}
	}
	return nil
}

// dateTime is the DateTime scalar: RFC 3339 text in UTC.
type dateTime struct{ time.Time }

func (dateTime) ImplementsGraphQLType(name string) bool { return name == "DateTime" }

func (t *dateTime) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok {
		return fmt.Errorf("DateTime must be a string, not %T", input)
	}
	v, err := time.Parse(time.RFC3339, s)
	t.Time = v.UTC()
	return err
}

func (t dateTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(time.RFC3339) + `"`), nil
}

type gqlRoot struct{ db *gqlStore }

func (r *gqlRoot) Users() []*userResolver {
	r.db.mu.RLock()
	defer r.db.mu.RUnlock()
	out := make([]*userResolver, 0, len(r.db.users))
	for _, u := range r.db.users {
		out = append(out, &userResolver{db: r.db, u: u})
	}
	slices.SortFunc(out, func(a, b *userResolver) int { return int(a.u.ID - b.u.ID) })
	return out
}

func (r *gqlRoot) User(args struct{ ID int32 }) *userResolver { return r.db.user(args.ID) }

func (r *gqlRoot) Posts() []*postResolver {
	r.db.mu.RLock()
	defer r.db.mu.RUnlock()
	out := make([]*postResolver, 0, len(r.db.posts))
	for _, p := range r.db.posts {
		out = append(out, &postResolver{db: r.db, p: p})
	}
	slices.SortFunc(out, func(a, b *postResolver) int { return int(a.p.ID - b.p.ID) })
	return out
}

func (r *gqlRoot) Post(args struct{ ID int32 }) *postResolver {
	r.db.mu.RLock()
	defer r.db.mu.RUnlock()
	if p := r.db.posts[args.ID]; p != nil {
		return &postResolver{db: r.db, p: p}
	}
	return nil
}

func validUser(name, email string) error {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return errors.New("name must be 1 to 100 characters")
	}
	if at := strings.IndexByte(email, '@'); at <= 0 || at == len(email)-1 {
		return errors.New("email must be a valid email address")
	}
	return nil
}

func (r *gqlRoot) CreateUser(args struct{ Name, Email string }) (*userResolver, error) {
	if err := validUser(args.Name, args.Email); err != nil {
		return nil, err
	}
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	db.nextUser++
	u := &genUser{ID: int64(db.nextUser), Name: strings.TrimSpace(args.Name), Email: args.Email, CreatedAt: time.Now().UTC()}
	db.users[db.nextUser] = u
	res := &userResolver{db: db, u: u}
	for c := range db.userSubs {
		select {
		case c <- res:
		default: // a subscriber that does not keep up misses events
		}
	}
	return res, nil
}

func (r *gqlRoot) UpdateUser(args struct {
	ID          int32
	Name, Email *string
}) (*userResolver, error) {
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	old := db.users[args.ID]
	if old == nil {
		return nil, fmt.Errorf("user %d not found", args.ID)
	}
	u := *old
	if args.Name != nil {
		u.Name = strings.TrimSpace(*args.Name)
	}
	if args.Email != nil {
		u.Email = *args.Email
	}
	if err := validUser(u.Name, u.Email); err != nil {
		return nil, err
	}
	db.users[args.ID] = &u
	return &userResolver{db: db, u: &u}, nil
}

func (r *gqlRoot) DeleteUser(args struct{ ID int32 }) bool {
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.users[args.ID] == nil {
		return false
	}
	delete(db.users, args.ID)
	for _, p := range db.postsByUser[args.ID] {
		delete(db.posts, int32(p.ID))
		delete(db.commentsByPost, int32(p.ID))
	}
	delete(db.postsByUser, args.ID)
	for pid, cs := range db.commentsByPost {
		db.commentsByPost[pid] = slices.DeleteFunc(slices.Clone(cs), func(c *genComment) bool { return c.AuthorID == int64(args.ID) })
	}
	return true
}

func (r *gqlRoot) CreatePost(args struct {
	UserID         int32
	Title, Content string
}) (*postResolver, error) {
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.users[args.UserID] == nil {
		return nil, fmt.Errorf("user %d not found", args.UserID)
	}
	if strings.TrimSpace(args.Title) == "" {
		return nil, errors.New("title is required")
	}
	db.nextPost++
	p := &genPost{ID: int64(db.nextPost), UserID: int64(args.UserID), Title: args.Title, Content: args.Content, CreatedAt: time.Now().UTC()}
	db.posts[db.nextPost] = p
	db.postsByUser[args.UserID] = append(slices.Clip(db.postsByUser[args.UserID]), p)
	res := &postResolver{db: db, p: p}
	for c := range db.postSubs {
		select {
		case c <- res:
		default:
		}
	}
	return res, nil
}

func (r *gqlRoot) AddComment(args struct {
	PostID, AuthorID int32
	Text             string
}) (*commentResolver, error) {
	db := r.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.posts[args.PostID] == nil {
		return nil, fmt.Errorf("post %d not found", args.PostID)
	}
	if db.users[args.AuthorID] == nil {
		return nil, fmt.Errorf("user %d not found", args.AuthorID)
	}
	db.nextComment++
	c := &genComment{ID: int64(db.nextComment), PostID: int64(args.PostID), AuthorID: int64(args.AuthorID), Text: args.Text, CreatedAt: time.Now().UTC()}
	db.commentsByPost[args.PostID] = append(slices.Clip(db.commentsByPost[args.PostID]), c)
	return &commentResolver{db: db, c: c}, nil
}

func (r *gqlRoot) OnUserCreated(ctx context.Context) <-chan *userResolver {
	return subscribe(ctx, r.db, r.db.userSubs)
}

func (r *gqlRoot) OnPostCreated(ctx context.Context) <-chan *postResolver {
	return subscribe(ctx, r.db, r.db.postSubs)
}

// subscribe registers a channel in subs until ctx ends.
func subscribe[T any](ctx context.Context, db *gqlStore, subs map[chan T]struct{}) <-chan T {
	c := make(chan T, 16)
	db.mu.Lock()
	subs[c] = struct{}{}
	db.mu.Unlock()
	go func() {
		<-ctx.Done()
		db.mu.Lock()
		delete(subs, c)
		db.mu.Unlock()
	}()
	return c
}

type userResolver struct {
	db *gqlStore
	u  *genUser
}

func (r *userResolver) ID() int32           { return int32(r.u.ID) }
func (r *userResolver) Name() string        { return r.u.Name }
func (r *userResolver) Email() string       { return r.u.Email }
func (r *userResolver) CreatedAt() dateTime { return dateTime{r.u.CreatedAt} }

func (r *userResolver) Posts(args struct{ Limit *int32 }) ([]*postResolver, error) {
	if args.Limit != nil && *args.Limit < 0 {
		return nil, errors.New("limit must not be negative")
	}
	r.db.mu.RLock()
	ps := r.db.postsByUser[int32(r.u.ID)]
	r.db.mu.RUnlock()
	if args.Limit != nil && int(*args.Limit) < len(ps) {
		ps = ps[:*args.Limit]
	}
	out := make([]*postResolver, len(ps))
	for i, p := range ps {
		out[i] = &postResolver{db: r.db, p: p}
	}
	return out, nil
}

type postResolver struct {
	db *gqlStore
	p  *genPost
}

func (r *postResolver) ID() int32           { return int32(r.p.ID) }
func (r *postResolver) Title() string       { return r.p.Title }
func (r *postResolver) Content() string     { return r.p.Content }
func (r *postResolver) UserID() int32       { return int32(r.p.UserID) }
func (r *postResolver) User() *userResolver { return r.db.user(int32(r.p.UserID)) }
func (r *postResolver) CreatedAt() dateTime { return dateTime{r.p.CreatedAt} }

func (r *postResolver) Comments() []*commentResolver {
	r.db.mu.RLock()
	cs := r.db.commentsByPost[int32(r.p.ID)]
	r.db.mu.RUnlock()
	out := make([]*commentResolver, len(cs))
	for i, c := range cs {
		out[i] = &commentResolver{db: r.db, c: c}
	}
	return out
}

type commentResolver struct {
	db *gqlStore
	c  *genComment
}

func (r *commentResolver) ID() int32           { return int32(r.c.ID) }
func (r *commentResolver) Text() string        { return r.c.Text }
func (r *commentResolver) PostID() int32       { return int32(r.c.PostID) }
func (r *commentResolver) CreatedAt() dateTime { return dateTime{r.c.CreatedAt} }

func (r *commentResolver) Author() (*userResolver, error) {
	if u := r.db.user(int32(r.c.AuthorID)); u != nil {
		return u, nil
	}
	return nil, fmt.Errorf("user %d not found", r.c.AuthorID)
}
