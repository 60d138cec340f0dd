package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"quartet/graphql"
	"quartet/internal/connlimit"
	"quartet/internal/cors"
	"quartet/internal/door"
	"quartet/internal/fairqueue"
	"quartet/internal/jwt"
	"quartet/internal/memory"
	"quartet/internal/metrics"
)

// app is a started service.
type app struct {
	cfg      config
	log      *slog.Logger
	store    *Store
	auth     *authenticator
	httpAddr string
	grpcAddr string
	http     *http.Server
	server   *Server
	grpc     *grpcServer
	queue    *fairqueue.Queue // the work slots the door admits through; nil: none
	done     sync.WaitGroup
	quit     chan struct{} // closed on shutdown, for the background work in done

	// httpLn and grpcLn bound and count the open connections.
	httpLn, grpcLn *connlimit.Listener
}

// httpMaxHeaderBytes bounds a request's header block (net/http allows 4096 bytes
// more before it answers 431).
const httpMaxHeaderBytes = 64 << 10

// start loads the store and starts listening; it returns once the service accepts
// connections, so a caller can use the bound addresses at once.
func start(cfg config, log *slog.Logger) (*app, error) {
	a := &app{cfg: cfg, log: log}
	grpcLimits := cfg.grpcLimits.withDefaults()
	fileLimit := connlimit.OpenFileLimit()
	httpMaxConns, lowered, err := httpConnLimit(cfg.httpMaxConns, grpcLimits.maxConns, fileLimit)
	if err != nil {
		return nil, err
	}
	if lowered {
		log.Info("the open-file limit leaves room for fewer HTTP connections than the default",
			"max", httpMaxConns, "default", defaultHTTPMaxConns, "openFileLimit", fileLimit)
	}
	vc, on, err := cfg.jwt.verifierConfig()
	if err != nil {
		return nil, err
	}
	if on {
		vc.Now = cfg.jwtClock
		v, err := jwt.New(vc)
		if err != nil {
			return nil, err
		}
		a.auth = &authenticator{verifier: v, reads: cfg.authReads}
	} else if cfg.authReads {
		return nil, errors.New("-auth-reads needs a key: -jwt-secret or -jwt-public-key")
	}
	var origins cors.Policy // -ws-origins is a deprecated alias: the two lists are merged
	if err := cmp.Or(origins.Add("-cors-origins", cfg.corsOrigins), origins.Add("-ws-origins", cfg.wsOrigins)); err != nil {
		return nil, err
	}
	if a.store, err = openStore(cfg, log); err != nil {
		return nil, err
	}
	httpLn, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		a.store.Close()
		return nil, fmt.Errorf("-http %s: %w", cfg.httpAddr, unwrapOpError(err))
	}
	grpcLn, err := net.Listen("tcp", cfg.grpcAddr)
	if err != nil {
		httpLn.Close()
		a.store.Close()
		return nil, fmt.Errorf("-grpc %s: %w", cfg.grpcAddr, unwrapOpError(err))
	}
	a.httpAddr, a.grpcAddr = httpLn.Addr().String(), grpcLn.Addr().String()
	var entrance *door.Door // one for both servers: a client's HTTP requests, gRPC calls and WebSocket operations share its queue
	if cfg.workSlots > 0 {
		a.queue = fairqueue.New(cfg.workSlots, cmp.Or(cfg.clientSlots, cfg.workSlots), cfg.clientWaiting)
		entrance = door.New(a.queue, door.Options{
			Waiting: cfg.clientWaiting, ClientBodyBytes: clientBodyBytes, TotalBodyBytes: totalBodyBytes, MaxBodyBytes: maxBodyBytes, Proxies: cfg.proxies})
	}
	a.httpLn = connlimit.New(httpLn, "HTTP", httpMaxConns, log)
	a.httpLn.PerClient = cfg.httpPerClient
	a.grpcLn = connlimit.New(grpcLn, "gRPC", grpcLimits.maxConns, log)
	a.grpcLn.PerClient = max(grpcLimits.maxConnsPerClient, 0)
	// A trusted proxy carries many clients' connections: only the overall caps hold it.
	a.httpLn.Exempt, a.grpcLn.Exempt = cfg.proxies.Contains, cfg.proxies.Contains
	a.grpcLn.FirstUse = grpcLimits.firstCallTimeout
	// A newcomer takes an idle connection's place, while grpc-go's own idle bound
	// (MaxConnectionIdle) is one duration that also ends the pauses between calls
	// clients rely on: trackCalls tells which are idle.
	a.grpcLn.Shed = true
	m := newMetrics() // one set for both servers: /metrics reports gRPC calls too
	a.server = NewServer(a.store, log, serverOptions{metrics: m, pprof: cfg.profiling(a.auth != nil), auth: a.auth, graphqlMaxDepth: cfg.graphqlMaxDepth, graphqlMaxCost: cfg.graphqlMaxCost, graphqlMaxBytes: cfg.graphqlMaxBytes, graphqlBatchMax: cfg.graphqlBatchMax, persistedOnly: cfg.graphqlPQOnly, origins: origins, ws: cfg.ws,
		door: entrance, proxies: cfg.proxies, warning: startWarning(cfg, a.auth != nil), publicURL: cfg.publicURL})
	if cfg.graphqlPQFile != "" {
		if err := a.server.pinPersistedQueries(cfg.graphqlPQFile, log); err != nil {
			httpLn.Close()
			grpcLn.Close()
			a.store.Close()
			return nil, err
		}
	}
	a.http = &http.Server{
		Handler:           origins.Handler(a.server),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // hijacked WebSockets are exempt: net/http clears deadlines

		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: httpMaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	a.grpc = newGRPCServer(a.store, log, cfg.streamDelay, a.auth, cfg.env == "development", grpcLimits, m, entrance, a.grpcLn)
	a.done.Go(func() {
		if err := a.http.Serve(a.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "error", err)
		}
	})
	a.done.Go(func() {
		if err := a.grpc.Serve(a.grpcLn); err != nil {
			log.Error("grpc server", "error", err)
		}
	})
	// The load's garbage is gone now; give its memory back while already serving, and
	// after every burst to come.
	go debug.FreeOSMemory()
	a.quit = make(chan struct{})
	a.done.Go(func() { memory.Manage(a.quit) })
	return a, nil
}

// newMetrics returns the counts /metrics reports; the help texts say what the
// routes, codes and protocols of the servers' tables are.
func newMetrics() *metrics.Set {
	return &metrics.Set{Help: metrics.Help{
		Requests: "Requests answered, by surface, route (pattern or gRPC method) and status code (HTTP status or gRPC code name).",
		Duration: "Time to answer a request (for a WebSocket or a gRPC stream: its whole life), by surface and route.",
		InFlight: "Requests being answered now, by protocol (HTTP includes open WebSockets).",
	}}
}

// routeOData is the route the metrics count an OData request under when no pattern
// matched it: bounded, unlike its path.
const routeOData = "/api/* (OData)"

// httpRoute is r's route in the metrics: the ServeMux pattern that matched, which
// keeps the label bounded; for the catch-all, routeOData or metrics.Unmatched.
func httpRoute(r *http.Request) string {
	switch {
	case r.Pattern != "" && r.Pattern != "/":
		return r.Pattern
	case isODataPath(r.URL.Path):
		return routeOData
	}
	return metrics.Unmatched
}

// httpSurface names the surface an HTTP route belongs to in the metrics: rest,
// graphql, odata, or other (/healthz, /metrics, /debug/pprof/ and unknown paths).
func httpSurface(route string) string {
	_, path, _ := strings.Cut(route, " ")
	switch {
	case route == routeOData:
		return "odata"
	case route == metrics.Unmatched:
		return "other"
	case strings.HasPrefix(path, "/graphql"):
		return "graphql"
	case strings.HasPrefix(path, "/api/users"):
		return "rest"
	case isODataPath(path):
		return "odata"
	case strings.HasPrefix(path, "/api/"):
		return "rest"
	}
	return "other"
}

// serviceGauges adds to a scrape the levels read at scrape time rather than
// counted: the GraphQL WebSockets (websockets nil: none) and the store's.
func serviceGauges(store *Store, websockets *graphql.WebSocketHandler, entrance *door.Door) func(*metrics.Text) {
	return func(x *metrics.Text) {
		if entrance != nil {
			st := entrance.Stats()
			x.Family("quartet_queue_slots_busy", "gauge", "Work slots held (HTTP requests, gRPC messages, WebSocket operations at work).")
			x.Sample("quartet_queue_slots_busy", float64(st.Running))
			x.Family("quartet_queue_waiting", "gauge", "Work waiting for a slot.")
			x.Sample("quartet_queue_waiting", float64(st.Waiting))
			x.Family("quartet_queue_body_bytes", "gauge", "Request body bytes read ahead by requests not yet done.")
			x.Sample("quartet_queue_body_bytes", float64(st.BodyBytes))
		}
		if websockets != nil {
			sockets, operations := websockets.Counts()
			x.Family("quartet_websocket_connections", "gauge", "GraphQL WebSockets open.")
			x.Sample("quartet_websocket_connections", float64(sockets))
			x.Family("quartet_websocket_subscriptions", "gauge", "GraphQL WebSocket operations (subscriptions, in the main) active.")
			x.Sample("quartet_websocket_subscriptions", float64(operations))
		}
		if store == nil {
			return
		}
		st := store.Stats()
		x.Family("quartet_store_records", "gauge", "Records in the store, by table.")
		for _, t := range []struct {
			name string
			n    int
		}{{"comments", st.Comments}, {"orders", st.Orders}, {"posts", st.Posts}, {"products", st.Products}, {"users", st.Users}} {
			x.Sample("quartet_store_records", float64(t.n), "table", t.name)
		}
		if st.Durable {
			x.Family("quartet_journal_writes_total", "counter", "Changes written to the journal.")
			x.Sample("quartet_journal_writes_total", float64(st.JournalWrites))
			x.Family("quartet_journal_fsyncs_total", "counter", "Journal fsyncs, one per group-committed batch: writes/fsyncs is the mean batch size.")
			x.Sample("quartet_journal_fsyncs_total", float64(st.JournalFsyncs))
		}
	}
}

// shutdown stops accepting, ends every subscription, and lets in-flight calls finish
// within the configured bound before cutting them off. Cutting them is part of a
// bounded shutdown, not a failure: it is logged (how many connections were still
// open) and shutdown still returns nil, so the process exits 0.
func (a *app) shutdown() error {
	bound, cancel := context.WithTimeout(context.Background(), a.cfg.shutdownTimeout)
	defer cancel()
	close(a.quit)
	a.store.CloseFeed() // first, so subscribers get their last events before the close frame
	// HTTP (its WebSockets first) and gRPC drain side by side until they are done or
	// cut; cut comes when the bound passes, once what is still open has been counted.
	cut, cutNow := context.WithCancel(context.Background())
	defer cutNow()
	httpDone := make(chan error, 1)
	go func() {
		wsErr := a.server.Shutdown(cut) // once cut, it drops the WebSockets left
		httpDone <- cmp.Or(a.http.Shutdown(cut), wsErr)
	}()
	grpcDone := make(chan error, 1)
	go func() {
		// Health first: a client or balancer watching it stops sending new calls
		// while the running ones finish.
		a.grpc.health.shutdown()
		a.grpc.GracefulStop()
		grpcDone <- nil
	}()
	var err error
	for httpDone != nil || grpcDone != nil {
		select {
		case err = <-httpDone:
			httpDone = nil
		case <-grpcDone:
			grpcDone = nil
		case <-bound.Done():
			a.log.Warn("shutdown: calls still running after -shutdown-timeout are cut",
				"timeout", a.cfg.shutdownTimeout, "httpConnections", a.httpLn.Open(), "grpcConnections", a.grpcLn.Open())
			cutNow()
			a.http.Close() // http.Shutdown leaves busy connections open
			a.grpc.Stop()
			for _, done := range []chan error{httpDone, grpcDone} {
				if done != nil {
					<-done
				}
			}
			httpDone, grpcDone, err = nil, nil, nil
		}
	}
	a.done.Wait()
	if serr := a.store.Close(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// openStore builds the store the configuration asks for: from DIR when -data names
// one that holds a store, else from -load, the demo data or nothing.
func openStore(cfg config, log *slog.Logger) (*Store, error) {
	seed := func() (*Dataset, error) {
		switch {
		case cfg.load != "":
			f, err := os.Open(cfg.load)
			if err != nil {
				return nil, fmt.Errorf("-load: %w", unwrapPathError(err))
			}
			defer f.Close()
			ds, err := ReadDataset(f)
			if err != nil {
				return nil, fmt.Errorf("-load %s: %w", cfg.load, err)
			}
			return ds, nil
		case cfg.demo:
			return DemoDataset(), nil
		}
		return &Dataset{}, nil
	}
	withClock := func(s *Store) *Store {
		if cfg.clock != nil {
			s.clock = cfg.clock
		}
		return s
	}
	if cfg.dataDir != "" {
		if cfg.load != "" {
			// Loading over a stored state would silently drop one or the other.
			if has, err := HasStore(cfg.dataDir); err != nil {
				return nil, fmt.Errorf("-data %s: %w", cfg.dataDir, err)
			} else if has {
				return nil, fmt.Errorf("-load %s: -data %s already holds a store; drop -load, or use an empty directory", cfg.load, cfg.dataDir)
			}
		}
		s, err := OpenDurableStore(cfg.dataDir, func() (*Dataset, error) {
			ds, err := seed()
			if err == nil {
				log.Info("initialising the data directory", "dir", cfg.dataDir, "from", cfg.seedName())
			}
			return ds, err
		}, log, DurableOptions{SnapshotBytes: cfg.snapshotBytes, Repair: cfg.repair})
		if err != nil {
			return nil, fmt.Errorf("-data %s: %w", cfg.dataDir, err)
		}
		return withClock(s), nil
	}
	ds, err := seed()
	if err != nil {
		return nil, err
	}
	store := withClock(NewStore())
	if err := store.Load(ds); err != nil {
		if cfg.load != "" { // named as the decoding's errors name it
			return nil, fmt.Errorf("-load %s: %w", cfg.load, err)
		}
		return nil, fmt.Errorf("dataset %s: %w", cfg.seedName(), err)
	}
	return store, nil
}

// seedName says where a new store's data comes from.
func (cfg config) seedName() string {
	switch {
	case cfg.load != "":
		return cfg.load
	case cfg.demo:
		return "demo"
	}
	return "empty"
}

// unwrapOpError drops the "listen tcp" prefix that would repeat what the caller says.
func unwrapOpError(err error) error {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Err != nil {
		if sys, ok := errors.AsType[*os.SyscallError](op.Err); ok {
			return sys.Err
		}
		return op.Err
	}
	return err
}

func unwrapPathError(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// maxGraphQLBatch bounds -graphql-batch-max: a batch runs its operations in turn
// on one request's goroutine, so its answer takes as long as all of them together.
const maxGraphQLBatch = 100

// maxManifestBytes bounds the persisted query manifest read at start-up.
const maxManifestBytes = 16 << 20

// pinPersistedQueries pins the operations of the Apollo persisted query manifest
// in file (-graphql-persisted-queries) in the GraphQL handler, so they are known
// by hash from the first request and, with -graphql-persisted-only, are the only
// ones that run.
func (s *Server) pinPersistedQueries(file string, log *slog.Logger) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("-graphql-persisted-queries: %w", unwrapPathError(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return fmt.Errorf("-graphql-persisted-queries: %w", unwrapPathError(err))
	}
	if len(data) > maxManifestBytes {
		return fmt.Errorf("-graphql-persisted-queries: %s is larger than %d bytes", file, maxManifestBytes)
	}
	n, err := s.graphql.PersistedQueries.PinManifest(s.graphql.Schema, data)
	if err != nil {
		return fmt.Errorf("-graphql-persisted-queries %s: %w", file, err)
	}
	log.Info("persisted queries pinned", "file", file, "operations", n, "only", s.graphql.PersistedOnly)
	return nil
}

// startWarning is what the service warns about for as long as it runs; "" is nothing.
func startWarning(cfg config, authOn bool) string {
	if cfg.env == "production" && !authOn {
		return openInProductionWarning
	}
	return ""
}
