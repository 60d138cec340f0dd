package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"quartet/userpb"
)

// The peers are the yardsticks the service is measured against. Each runs in a
// process of its own ("bench peer -kind ..."), loads the same dataset file the
// service loads, and serves on the addresses it is given until SIGTERM.

// peerDataset is the part of a dataset file the peers serve.
type peerDataset struct {
	Users    []genUser    `json:"users"`
	Posts    []genPost    `json:"posts"`
	Comments []genComment `json:"comments"`
}

func readPeerDataset(path string) (*peerDataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ds peerDataset
	if err := json.NewDecoder(f).Decode(&ds); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &ds, nil
}

// runPeer is the "peer" subcommand.
func runPeer(args []string) error {
	fs := flag.NewFlagSet("bench peer", flag.ContinueOnError)
	kind := fs.String("kind", "", "which peer: http (bare net/http), grpc (bare grpc-go) or graphql (graph-gophers)")
	load := fs.String("load", "", "dataset `file`")
	httpAddr := fs.String("http", "127.0.0.1:0", "HTTP `address` (http, graphql)")
	grpcAddr := fs.String("grpc", "127.0.0.1:0", "gRPC `address` (grpc)")
	schemaFile := fs.String("schema", "../schema.graphql", "GraphQL SDL `file` (graphql)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ds, err := readPeerDataset(*load)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch *kind {
	case "http":
		return serveHTTP(ctx, *httpAddr, bareHTTPHandler(ds))
	case "graphql":
		sdl, err := os.ReadFile(*schemaFile)
		if err != nil {
			return err
		}
		h, err := graphGophersHandler(string(sdl), ds)
		if err != nil {
			return err
		}
		return serveHTTP(ctx, *httpAddr, h)
	case "grpc":
		return serveBareGRPC(ctx, *grpcAddr, ds)
	}
	return fmt.Errorf("unknown peer kind %q", *kind)
}

// serveHTTP serves h on addr, with /healthz, until ctx ends.
func serveHTTP(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// bareHTTPHandler is the REST ceiling, GET /api/users/{id} from a map encoded with
// encoding/json; the GraphQL one, POST /graphql answered with user 7 whatever the
// query; and the fan-out one (bareFanOut); nothing else.
func bareHTTPHandler(ds *peerDataset) http.Handler {
	users := make(map[int64]genUser, len(ds.Users))
	for _, u := range ds.Users {
		users[u.ID] = u
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		u, ok := users[id]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(u)
	})
	// What is left of a POST /graphql without GraphQL work: net/http's own cost.
	answer, err := json.Marshal(map[string]any{"data": map[string]any{"user": map[string]any{
		"id": users[7].ID, "name": users[7].Name, "email": users[7].Email}}})
	if err != nil {
		panic(err)
	}
	newBareFanOut(mux)
	mux.HandleFunc("POST /graphql", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	return mux
}

// bareUserService is the gRPC ceiling: GetUser from a map.
type bareUserService struct {
	userpb.UnimplementedUserServiceServer
	users map[int32]genUser
}

func (s *bareUserService) GetUser(ctx context.Context, req *userpb.GetUserRequest) (*userpb.UserResponse, error) {
	u, ok := s.users[req.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "user %d not found", req.GetId())
	}
	return &userpb.UserResponse{Id: int32(u.ID), Name: u.Name, Email: u.Email, CreatedAt: u.CreatedAt.UTC().Format(time.DateTime)}, nil
}

func serveBareGRPC(ctx context.Context, addr string, ds *peerDataset) error {
	svc := &bareUserService{users: make(map[int32]genUser, len(ds.Users))}
	for _, u := range ds.Users {
		svc.users[int32(u.ID)] = u
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	userpb.RegisterUserServiceServer(srv, svc)
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	return srv.Serve(ln)
}
