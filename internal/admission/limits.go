// Package admission decides what each client may hold of the service at once, at
// every door: connections (Listener), work slots and waiting work (Queue, Door),
// request bodies read ahead and answers waiting for their readers (Door), WebSocket
// sockets and operations and gRPC batches (Budget). One vocabulary: a client (Of,
// Proxies) claims part of a budget and releases it; a claim that does not fit is
// refused at once (Refused), and the surface answers it in its own format. Limits
// is the one list of every budget, its default and its flag.
package admission

import (
	"flag"
	"runtime"
)

// MaxBodyBytes is the largest request body of any surface (REST, GraphQL): a
// longer one is the handler's to refuse with 413.
const MaxBodyBytes = 1 << 20

// Limits are the budgets. Register gives each its flag; Defaults their values.
type Limits struct {
	WorkSlots     int // work under way at once, over all clients; 0: no queue
	ClientSlots   int // of them, one client's; 0: as many as WorkSlots
	ClientWaiting int // one client's work waiting for a slot

	ClientBodyBytes, TotalBodyBytes     int64 // request bodies read ahead of their slot
	ClientAnswerBytes, TotalAnswerBytes int64 // answers rendered, not yet written

	WSSockets, WSSocketsPerClient       int // GraphQL WebSockets open; 0: no bound
	WSOperations, WSOperationsPerClient int // operations active over them; 0: no bound

	BatchClientBytes, BatchTotalBytes int64 // users of gRPC CreateUsers calls held until the last arrives

	TrustedProxies string // addresses and prefixes of proxies trusted to name their client
	ProxyHeader    string // the header they name it in
}

// AnswerGrace is the part of an answer not counted against the answers budget: an
// answer that small is the size of a connection's own buffers, and connections
// are bounded; counting it would cost every small answer a lock.
const AnswerGrace = 64 << 10

// Defaults returns the budgets a service gets unless flags say otherwise.
func Defaults() Limits {
	cpus := runtime.GOMAXPROCS(0)
	return Limits{
		// While another client has work, a client holds at most half the CPUs'
		// worth, so that the other finds a CPU as well as a slot; alone, it is held
		// to none (Queue). Four slots per CPU in all: another client finds its
		// share at once rather than waiting for a flood's work to end.
		WorkSlots: 4 * cpus, ClientSlots: max(1, cpus/2),
		// Each waiting request holds a connection and a goroutine, both bounded.
		ClientWaiting: 256,
		// Two of the largest bodies a client; 64 MiB in all.
		ClientBodyBytes: 2 * (MaxBodyBytes + 1), TotalBodyBytes: 64 << 20,
		// Two of the largest GraphQL answers (16 MiB) a client, four in all: a
		// service whose readers all stall stays under 512 MB (bench/README.md).
		ClientAnswerBytes: 32 << 20, TotalAnswerBytes: 64 << 20,
		WSSockets: 10_000, WSSocketsPerClient: 100,
		WSOperations: 100_000, WSOperationsPerClient: 1_000,
		// 10,000 users take about 2 MB: two full calls a client, four in all.
		BatchClientBytes: 8 << 20, BatchTotalBytes: 16 << 20,
		ProxyHeader: HeaderXForwardedFor,
	}
}

// Register adds a flag for each budget an operator tunes to fs, with l's values
// as defaults.
func (l *Limits) Register(fs *flag.FlagSet) {
	fs.IntVar(&l.WorkSlots, "work-slots", l.WorkSlots, "requests and messages worked on at once over all clients, 0 for no queue (docs/limits.md)")
	fs.IntVar(&l.ClientSlots, "client-slots", l.ClientSlots, "of the work slots, the most one client holds while another has work (docs/limits.md)")
	fs.IntVar(&l.ClientWaiting, "client-waiting", l.ClientWaiting, "most work of one client waiting for a slot (docs/limits.md)")
	fs.Int64Var(&l.ClientAnswerBytes, "client-answer-bytes", l.ClientAnswerBytes, "answer bytes one client may have rendered and not yet read (docs/limits.md)")
	fs.Int64Var(&l.TotalAnswerBytes, "answer-bytes", l.TotalAnswerBytes, "answer bytes all clients may have rendered and not yet read (docs/limits.md)")
	fs.IntVar(&l.WSSockets, "ws-max-sockets", l.WSSockets, "most GraphQL WebSockets open at once, 0 for no limit (docs/limits.md)")
	fs.IntVar(&l.WSSocketsPerClient, "ws-max-sockets-per-client", l.WSSocketsPerClient, "most GraphQL WebSockets of one client open at once, 0 for no limit (docs/limits.md)")
	fs.IntVar(&l.WSOperations, "ws-max-subscriptions", l.WSOperations, "most GraphQL WebSocket operations active at once, 0 for no limit (docs/limits.md)")
	fs.IntVar(&l.WSOperationsPerClient, "ws-max-subscriptions-per-client", l.WSOperationsPerClient, "most GraphQL WebSocket operations of one client active at once, 0 for no limit (docs/limits.md)")
	fs.StringVar(&l.TrustedProxies, "trusted-proxies", l.TrustedProxies, "comma-separated `addresses` and CIDR prefixes of the reverse proxies trusted to name their client (docs/limits.md)")
	fs.StringVar(&l.ProxyHeader, "trusted-proxy-header", l.ProxyHeader, "the `header` the trusted proxies name their client in: X-Forwarded-For or Forwarded (docs/limits.md)")
}
