// Package journal keeps a state durably in a directory: a snapshot of it and the
// records appended since, so that after kill -9 or a power cut the state is rebuilt
// exactly as its writers were told. Records are opaque payloads: what they mean, how
// the state is captured for a snapshot and restored from one, and how a record that
// could not be stored is undone is the Host's.
//
// It guarantees:
//   - A record whose Pending.Wait returned nil is on disk, fsynced with everything it
//     depends on (its file's growth and name), and the next Open replays it, after
//     the records appended before it and in their order.
//   - Appends waiting at the same time share one fsync (group commit).
//   - Record.Stored runs only once the record is on disk, in append order.
//   - When the disk fails, the Host is told and every record not on disk is undone,
//     newest first, before any of their writers is answered; from then on nothing
//     is written, and Wait and Close report ErrFailed, until the directory is opened
//     again. What the failed batch wrote is zeroed again in the file (should that
//     fail too, Open finds those records whole or torn, and either is right: their
//     writers were told nothing was stored, which promises nothing).
//   - Open accepts one damage: the torn tail a crash leaves of the group commit it
//     interrupted (whose writers were not answered), cut away with one warning. It
//     refuses anything else with one line naming the file: a missing, truncated or
//     corrupt snapshot; a journal missing, another store's, or not following from
//     the snapshot; damage in a journal (cut short, a record failing its checksum or
//     refused by Host.Replay), named with its byte offset, which Options.Repair cuts
//     there instead, keeping the bytes cut, and any later journal, beside it. What it
//     cannot see is in docs/durability.md.
//   - One process at a time: DIR/LOCK is held with flock while a Journal is open.
//
// DIR holds
//
//	LOCK                 held with flock while a process uses DIR
//	snapshot             the whole state as of the start of journal <gen>
//	journal-<gen>.log    the records appended since
//
// The snapshot names its generation and the store's id (random, made when DIR is
// initialised); each journal starts with a header naming its own generation and the
// same id. Open replays exactly the journals <gen>, <gen>+1, ... of that store, and
// refuses a DIR where one is missing or foreign, or where the snapshot is missing
// while a journal says one was written: replaying such a DIR would silently serve a
// state no client ever saw (ids reused, orders given to the wrong user).
//
// A journal comes into being whole: written as journal-<gen>.log.tmp, its header
// fsynced before the snapshot that names it is written, and renamed into place (after
// that snapshot for the first journal, see open; before it at a rotation). Its file
// grows in whole steps (journalStep), each made durable before a record is written
// into it, and what follows the last record is zeros. So a crash can leave only the
// last record incomplete, followed by zeros; a journal whose header is missing or
// short, whose size is not whole steps, or whose last record runs past the end of the
// file was damaged after it was written, and Open refuses it.
//
// A payload must not end in a zero byte (see tornTail) nor start as a journal header
// does (see journalHeaderStart); JSON other than a journal header, such as the
// store's, meets both.
package journal

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// DefaultSnapshotBytes is the journal size past which a snapshot is taken, unless
// Options say otherwise.
const DefaultSnapshotBytes = 64 << 20

// Options tune Open.
type Options struct {
	// SnapshotBytes is the journal size past which a snapshot is taken; 0 means
	// DefaultSnapshotBytes.
	SnapshotBytes int64

	// Repair cuts a damaged journal at its damage, saving the bytes cut (and any
	// later journal) beside it, instead of refusing to start.
	Repair bool

	// WrapFile, when set, wraps every journal file written: tests inject storage
	// failures through it.
	WrapFile func(File) File
}

// File is what the journal writes through: an *os.File, or in tests one that fails
// on cue.
type File interface {
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Host is the state a journal keeps. Its Appends are made under a lock of its own,
// which orders them as its state changed.
type Host interface {
	// Seed fills the host when DIR holds no store; the first snapshot is then
	// captured from it.
	Seed() error
	// Restore fills the host from the snapshot: header is a JSON object, the fields
	// of the meta Capture returned with the journal's "gen" and "store"; body is
	// Capture's body. Replay follows, for each record after the snapshot.
	Restore(header, body []byte) error
	// Replay applies one record's payload; an error, leaving the host as it was,
	// says the record is damaged.
	Replay(payload []byte) error
	// Capture is called when a snapshot is due. Holding the host's lock, so that no
	// Append runs, it calls mark once and captures the state; it returns what encodes
	// that state, which runs later on another goroutine: meta, a JSON object whose
	// fields go into the snapshot's header, and the body.
	Capture(mark func()) (encode func() (meta, body []byte, err error))
	// Failed is called when the disk failed. Holding the host's lock, it makes sure
	// no Append follows, then calls rollback, which undoes every record not stored.
	Failed(rollback func())
}

// Record is one Append.
type Record interface {
	// Payload encodes the record. It runs on the flusher, after Append returned, so
	// what it encodes must not change once appended.
	Payload() ([]byte, error)
	// Stored runs once the record is on disk and its writer released, in append
	// order.
	Stored()
	// Undo rolls the record back in the host; rollback (see Host.Failed) calls it,
	// newest record first.
	Undo()
}

// ErrFailed is what Wait and Close report after the disk failed: what reached the
// journal of the failed batch is uncertain (a failed fsync may or may not have
// written it), and only opening DIR again, which reads the journal, knows.
var ErrFailed = errors.New("journal write failed; writes are refused until a restart")

// errClosed refuses an Append that comes after Close: nothing would ever write it.
var errClosed = errors.New("the journal is closed")

// Journal is an open DIR: the append-only log of records and its flusher.
type Journal struct {
	dir           string
	log           *slog.Logger
	host          Host
	snapshotBytes int64
	repair        bool
	wrapFile      func(File) File
	lock          *os.File

	mu           sync.Mutex
	queue        []*Pending
	closing      bool
	snapshotting bool
	wake         chan struct{}
	stopped      chan struct{}
	snapshots    sync.WaitGroup

	// storeID is the store's id, in the snapshot and in every journal's header.
	storeID string

	// Owned by the flusher goroutine.
	file   File
	gen    uint64
	size   int64 // where the durable records end
	alloc  int64 // the file's size, whole steps; past size it holds zeros
	step   int64 // what the file grows by, as its header says
	dirty  int64 // bytes past size a write in progress may have changed
	failed bool  // the disk failed: nothing more is written
	// writes and syncs count the records written and the fsyncs that made them
	// durable: their ratio is group commit at work, logged on close.
	writes, syncs atomic.Int64 // atomic: /metrics reads them while the flusher counts
}

// Pending is an appended record waiting for its fsync. (In the queue, a Pending
// without a record marks where the journal rotates.)
type Pending struct {
	rec Record
	// done is released once the record is on disk or err says why not; a WaitGroup
	// rather than a channel, which would be an allocation more per write.
	done   sync.WaitGroup
	err    error
	rotate *rotation
}

// rotation starts journal gen; rotated is closed once the new file exists.
type rotation struct {
	gen     uint64
	rotated chan struct{}
	err     error
}

// Wait waits until the record is on disk, or says why it is not: ErrFailed, and the
// record was undone, or, for an Append after Close, that the journal is closed.
func (p *Pending) Wait() error {
	p.done.Wait()
	return p.err
}

// errDirInUse is returned when another process holds DIR.
var errDirInUse = errors.New("is in use by another quartet process")

// Open opens the journal kept in dir, creating dir if need be, and holds it until
// Close. A dir that holds no store (see Has) is initialised from h.Seed; otherwise
// the snapshot is restored into h and the records after it replayed, as the package
// doc says.
func Open(dir string, log *slog.Logger, opts Options, h Host) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s %w", dir, errDirInUse)
		}
		return nil, err
	}
	j := &Journal{dir: dir, log: log, host: h, snapshotBytes: cmp.Or(opts.SnapshotBytes, DefaultSnapshotBytes),
		repair: opts.Repair, wrapFile: opts.WrapFile, lock: lock, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	if err := j.open(); err != nil {
		lock.Close()
		return nil, err
	}
	go j.flush()
	return j, nil
}

func (j *Journal) open() error {
	existing, err := Has(j.dir)
	if err != nil {
		return err
	}
	if existing {
		return j.recover()
	}
	if err := j.host.Seed(); err != nil {
		return err
	}
	// The first journal is written (under its temporary name) before the snapshot,
	// and renamed into place after it. A crash before the snapshot leaves neither
	// snapshot nor journal: no store, started afresh. A crash between leaves the
	// snapshot and the written journal, which Open renames into place (see
	// recover). Once both are in place, any journal without its snapshot, even one
	// holding nothing but its header, was damaged, never an initialisation cut short.
	j.storeID = newStoreID()
	f, end, err := writeJournal(j.dir, 1, j.storeID, nil)
	if err != nil {
		return err
	}
	if err := writeSnapshot(j.dir, 1, j.storeID, j.host.Capture(func() {})); err != nil {
		f.Close()
		return fmt.Errorf("writing the first snapshot: %w", err)
	}
	if err := publishJournal(j.dir, 1); err != nil {
		f.Close()
		return err
	}
	j.use(f, 1, end, roundUp(end, journalStep), journalStep)
	return nil
}

// Append queues r behind every record appended before it. The caller holds the
// host's lock, so the queue's order is the order the state changed in.
func (j *Journal) Append(r Record) *Pending {
	w := &Pending{rec: r}
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		w.err = errClosed
		return w
	}
	w.done.Add(1)
	j.queue = append(j.queue, w)
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	return w
}

// Stats returns the records written and the fsyncs that made them durable.
func (j *Journal) Stats() (writes, fsyncs int64) { return j.writes.Load(), j.syncs.Load() }

// flush is the flusher goroutine: it writes what is queued, one fsync per batch, then
// releases the batch's writers and tells of its records in append order.
func (j *Journal) flush() {
	defer close(j.stopped)
	var buf []byte
	for {
		j.mu.Lock()
		batch, closing := j.queue, j.closing
		j.queue = nil
		j.mu.Unlock()
		if len(batch) > 1 {
			// Writers are concurrent: let those already running reach the queue
			// and share this fsync, rather than wait for the next one. A lone
			// writer is not delayed.
			runtime.Gosched()
			j.mu.Lock()
			batch = append(batch, j.queue...)
			j.queue = nil
			j.mu.Unlock()
		}
		if len(batch) == 0 {
			if closing {
				return
			}
			<-j.wake
			continue
		}
		if j.failed {
			// The host refuses writes after a failure, so nothing should be
			// queued; anything that is is undone and refused the same way.
			j.fail(batch, ErrFailed)
			continue
		}
		buf = buf[:0]
		var err error
		start := 0
		for i, w := range batch {
			if w.rotate == nil {
				j.writes.Add(1)
				payload, pErr := w.rec.Payload()
				if pErr != nil {
					err = pErr
				}
				buf = appendRecord(buf, payload)
				continue
			}
			// Everything before the marker belongs to the old journal.
			if err = j.writeAndSync(buf, err); err != nil {
				break
			}
			j.release(batch[start:i])
			buf, start = buf[:0], i+1
			w.rotate.err = j.rotate(w.rotate.gen)
			close(w.rotate.rotated)
		}
		if err == nil {
			err = j.writeAndSync(buf, nil)
		}
		if err != nil {
			j.fail(batch[start:], err)
			continue
		}
		j.release(batch[start:])
		j.maybeSnapshot()
	}
}

// writeAndSync appends buf to the journal and fsyncs it; err is an encoding failure
// already met, which stands for the write.
func (j *Journal) writeAndSync(buf []byte, err error) error {
	if err != nil || len(buf) == 0 {
		return err
	}
	if end := j.size + int64(len(buf)); end > j.alloc {
		// The file grows, durably, before anything is written past its old end: a
		// crash then never leaves a record running past the end of the file, and
		// Open can call one that does a cut.
		alloc := roundUp(end, j.step)
		if err := j.file.Truncate(alloc); err != nil {
			return err
		}
		if err := j.file.Sync(); err != nil {
			return err
		}
		j.alloc = alloc
	}
	j.dirty = int64(len(buf))
	if _, err := j.file.WriteAt(buf, j.size); err != nil {
		return err
	}
	j.syncs.Add(1)
	if err := j.file.Sync(); err != nil {
		return err
	}
	j.size += int64(len(buf))
	j.dirty = 0
	return nil
}

// release answers the writers of a batch that is on disk, then tells of its records,
// in append order.
func (j *Journal) release(batch []*Pending) {
	for _, w := range batch {
		if w.rotate == nil {
			w.done.Done()
		}
	}
	for _, w := range batch {
		if w.rec != nil {
			w.rec.Stored()
		}
	}
}

// fail handles a storage failure while rest, the start of which was being written,
// waited for the disk. Nothing is written from then on; every record not on disk
// (rest, and whatever was queued behind it, all appended after the last record that
// is) is undone under the host's lock, newest first, so that no reader sees a write
// after its writer was told it failed; what the batch wrote in the journal is zeroed
// again; then the writers are answered, with no detail: the cause is logged here, once.
func (j *Journal) fail(rest []*Pending, cause error) {
	if !j.failed {
		j.failed = true
		j.log.Error("journal write failed; the writes not stored are rolled back and further writes refused until a restart",
			"error", cause, "rolledBack", countRecords(rest))
		if j.dirty > 0 {
			// Zeroed rather than cut off: the file keeps its size, whole steps.
			if _, err := j.file.WriteAt(make([]byte, j.dirty), j.size); err != nil {
				// Open then finds the failed batch's records whole (and keeps
				// them: their writers were told the write failed, which
				// promises nothing) or torn (and cuts them away).
				j.log.Error("zeroing the failed write in the journal failed", "error", err)
			}
		}
	}
	j.host.Failed(func() {
		j.mu.Lock()
		rest = append(rest, j.queue...) // nothing joins the queue now: the host refuses writes
		j.queue = nil
		j.mu.Unlock()
		for i := len(rest) - 1; i >= 0; i-- {
			if w := rest[i]; w.rec != nil {
				w.rec.Undo()
			}
		}
	})
	for _, w := range rest {
		if w.rotate != nil {
			w.rotate.err = ErrFailed
			close(w.rotate.rotated)
			continue
		}
		w.err = ErrFailed
		w.done.Done()
	}
}

// countRecords counts the records among ws (the rest are rotation markers).
func countRecords(ws []*Pending) int {
	n := 0
	for _, w := range ws {
		if w.rec != nil {
			n++
		}
	}
	return n
}

// maybeSnapshot starts a snapshot when the journal has grown past the threshold. The
// state is captured and the rotation marker queued under the host's lock, so the
// snapshot holds exactly the records queued before the marker.
func (j *Journal) maybeSnapshot() {
	j.mu.Lock()
	due := j.size >= j.snapshotBytes && !j.snapshotting && !j.closing && !j.failed
	if due {
		j.snapshotting = true
	}
	j.mu.Unlock()
	if !due {
		return
	}
	gen := j.gen + 1
	rot := &rotation{gen: gen, rotated: make(chan struct{})}
	encode := j.host.Capture(func() {
		j.mu.Lock()
		j.queue = append(j.queue, &Pending{rotate: rot})
		j.mu.Unlock()
	})
	j.snapshots.Go(func() {
		defer func() {
			j.mu.Lock()
			j.snapshotting = false
			j.mu.Unlock()
		}()
		<-rot.rotated
		if rot.err != nil {
			j.log.Error("journal rotation failed", "error", rot.err)
			return
		}
		if err := writeSnapshot(j.dir, gen, j.storeID, encode); err != nil {
			j.log.Error("snapshot failed; the journal keeps everything", "error", err)
			return
		}
		removeJournalsBefore(j.dir, gen, j.log)
	})
}

// rotate closes the current journal and starts journal gen. The snapshot of gen is
// written only once this has returned, so the new journal is in place, its header
// durable, before any snapshot names it.
func (j *Journal) rotate(gen uint64) error {
	if err := j.file.Sync(); err != nil {
		return err
	}
	f, end, err := createJournal(j.dir, gen, j.storeID, nil)
	if err != nil {
		return err
	}
	if err := j.file.Close(); err != nil {
		// Logged, and no more: everything in that journal was fsynced just above.
		j.log.Error("closing the previous journal", "file", filepath.Join(j.dir, journalName(j.gen)), "error", err)
	}
	j.use(f, gen, end, roundUp(end, journalStep), journalStep)
	return nil
}

// use makes f, journal gen, the journal written to: its records end at end, its file
// is alloc bytes long and grows by step.
func (j *Journal) use(f *os.File, gen uint64, end, alloc, step int64) {
	var file File = f
	if j.wrapFile != nil {
		file = j.wrapFile(f)
	}
	j.file, j.gen, j.size, j.alloc, j.step = file, gen, end, alloc, step
}

// Close writes what is queued, waits for a running snapshot, and releases DIR.
// Appends after it are refused.
func (j *Journal) Close() error {
	j.mu.Lock()
	j.closing = true
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-j.stopped
	j.log.Info("journal closed", "writes", j.writes.Load(), "fsyncs", j.syncs.Load())
	j.snapshots.Wait()
	if j.failed {
		j.file.Close()
		j.lock.Close()
		return ErrFailed
	}
	err := j.file.Sync()
	if cerr := j.file.Close(); err == nil {
		err = cerr
	}
	j.lock.Close() // closing the descriptor drops the flock
	return err
}
