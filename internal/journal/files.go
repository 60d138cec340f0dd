package journal

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The files of DIR: records and their framing, journal files, the snapshot file.

// journalStep is what a journal file grows by. A file grown this way shows a cut (its
// size is no longer whole steps) that an appended file would hide, at the price of one
// fsync more per step; the space is not written, so it costs no disk until used.
const journalStep = 1 << 20

// roundUp returns n rounded up to whole steps.
func roundUp(n, step int64) int64 { return (n + step - 1) / step * step }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Records are framed as [length u32][crc32c(payload) u32][crc32c(first 8 bytes) u32]
// [payload], little endian. The header's own checksum lets recovery trust a length,
// and so tell a record cut short by a crash (see tornTail) from a damaged one.
const recordHeaderSize = 12

func appendRecord(b, payload []byte) []byte {
	var h [recordHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(h[:8], castagnoli))
	return append(append(b, h[:]...), payload...)
}

// readRecord returns the record at data[off:], or ok false if there is no whole,
// intact record there.
func readRecord(data []byte, off int) (payload []byte, next int, ok bool) {
	if len(data)-off < recordHeaderSize {
		return nil, off, false
	}
	h := data[off : off+recordHeaderSize]
	if crc32.Checksum(h[:8], castagnoli) != binary.LittleEndian.Uint32(h[8:]) {
		return nil, off, false
	}
	n := int(binary.LittleEndian.Uint32(h[0:]))
	end := off + recordHeaderSize + n
	if n < 0 || end > len(data) || end < off {
		return nil, off, false
	}
	payload = data[off+recordHeaderSize : end]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, off, false
	}
	return payload, end, true
}

// recordRunsPast reports whether data starts with an intact record header whose
// record needs more bytes than data holds.
func recordRunsPast(data []byte) bool {
	if len(data) < recordHeaderSize {
		return false
	}
	h := data[:recordHeaderSize]
	if crc32.Checksum(h[:8], castagnoli) != binary.LittleEndian.Uint32(h[8:]) {
		return false
	}
	return int64(len(data)-recordHeaderSize) < int64(binary.LittleEndian.Uint32(h[0:]))
}

func journalName(gen uint64) string { return fmt.Sprintf("journal-%016d.log", gen) }

// journalHeader is the first record of a journal: which journal of which store it is,
// and the step its file grows by (none in the journals of earlier versions, which grew
// byte by byte and which this version refuses).
type journalHeader struct {
	Journal uint64 `json:"journal"`
	Store   string `json:"store"`
	Step    int64  `json:"step"`
}

// journalHeaderStart is how a journal header starts and a record does not (see the
// package doc), which is how a journal without its header is told apart.
var journalHeaderStart = []byte(`{"journal":`)

// createJournal creates journal gen of store holding records (whole, framed ones)
// after its header, durably, replacing any journal gen there was, and returns it open
// for writing, with where its records end.
func createJournal(dir string, gen uint64, store string, records []byte) (*os.File, int64, error) {
	f, end, err := writeJournal(dir, gen, store, records)
	if err != nil {
		return nil, 0, err
	}
	if err := publishJournal(dir, gen); err != nil {
		f.Close()
		os.Remove(journalTemp(dir, gen))
		return nil, 0, err
	}
	return f, end, nil
}

// writeJournal writes journal gen of store, as createJournal describes, under its
// temporary name: header and records, zeros to a whole number of steps, fsynced. A
// file it fails to write is removed.
func writeJournal(dir string, gen uint64, store string, records []byte) (*os.File, int64, error) {
	name := journalTemp(dir, gen)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, 0, err
	}
	payload, err := json.Marshal(journalHeader{gen, store, journalStep})
	data := append(appendRecord(nil, payload), records...)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Truncate(roundUp(int64(len(data)), journalStep))
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(name)
		return nil, 0, err
	}
	return f, int64(len(data)), nil
}

// publishJournal renames journal gen, written by writeJournal, into place, durably.
func publishJournal(dir string, gen uint64) error {
	if err := os.Rename(journalTemp(dir, gen), filepath.Join(dir, journalName(gen))); err != nil {
		return err
	}
	return syncDir(dir)
}

// journalTemp is the name journal gen is written under until it is complete.
func journalTemp(dir string, gen uint64) string {
	return filepath.Join(dir, journalName(gen)+".tmp")
}

// newStoreID makes the id of a new store.
func newStoreID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// syncDir makes a created, renamed or removed file name durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeFileSync writes a new file and makes it durable.
func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func removeJournalsBefore(dir string, gen uint64, log *slog.Logger) {
	gens, err := journalGens(dir)
	if err != nil {
		log.Error("listing journals", "error", err)
		return
	}
	for _, g := range gens {
		if g < gen {
			if err := os.Remove(filepath.Join(dir, journalName(g))); err != nil {
				log.Error("removing an old journal", "error", err)
			}
		}
	}
	if err := syncDir(dir); err != nil {
		// Logged, and no more: after a crash a removed journal may be back, which
		// harms nothing, since Open reads only the journals from the snapshot's on,
		// and the next snapshot removes it again.
		log.Error("making the removal of old journals durable", "dir", dir, "error", err)
	}
}

// journalGens lists the journal generations in DIR in ascending order.
func journalGens(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	for _, e := range entries {
		name := e.Name()
		if num, ok := strings.CutPrefix(name, "journal-"); ok {
			if num, ok = strings.CutSuffix(num, ".log"); ok {
				if g, err := strconv.ParseUint(num, 10, 64); err == nil {
					gens = append(gens, g)
				}
			}
		}
	}
	slices.Sort(gens)
	return gens, nil
}

// Has reports whether dir already holds a store: a snapshot or a journal (a journal
// without its snapshot is a store damaged, which Open refuses). An initialisation cut
// short leaves neither, only temporary files (see open).
func Has(dir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, "snapshot")); err == nil {
		return true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	gens, err := journalGens(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return len(gens) > 0, err
}

// A snapshot file is two records: a header, a JSON object holding the snapshot's
// generation (the first journal not contained in it), the store's id and the fields
// of the host's meta, and the host's body.
type snapshotHeader struct {
	Gen   uint64 `json:"gen"`
	Store string `json:"store"`
}

// snapshotHeaderOf returns the header record of snapshot gen of store: meta, a JSON
// object, with "gen" added first and "store" last.
func snapshotHeaderOf(gen uint64, store string, meta []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(meta, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("the snapshot's meta is not a JSON object: %s", meta)
	}
	inner := strings.TrimSpace(string(meta))
	inner = strings.TrimSpace(inner[1 : len(inner)-1])
	h := fmt.Appendf(nil, `{"gen":%d,`, gen)
	if inner != "" {
		h = append(append(h, inner...), ',')
	}
	id, err := json.Marshal(store)
	return append(append(append(h, `"store":`...), id...), '}'), err
}

// writeSnapshot replaces DIR/snapshot atomically with snapshot gen of store, as encode
// gives it: temp file, fsync, rename, fsync DIR.
func writeSnapshot(dir string, gen uint64, store string, encode func() (meta, body []byte, err error)) error {
	meta, body, err := encode()
	if err != nil {
		return err
	}
	header, err := snapshotHeaderOf(gen, store, meta)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "snapshot.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(appendRecord(appendRecord(nil, header), body)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "snapshot")); err != nil {
		return err
	}
	return syncDir(dir)
}

// readSnapshot checks a snapshot file and returns its two records and what its header
// says. (Files of the first formats, one record holding both or a header without the
// store's id, are refused: this version does not read them.)
func readSnapshot(data []byte) (h snapshotHeader, header, body []byte, err error) {
	header, next, ok := readRecord(data, 0)
	if !ok {
		return h, nil, nil, snapshotDamage(data, 0)
	}
	if next == len(data) {
		return h, nil, nil, fmt.Errorf("is truncated: it ends at byte %d, where its records should start (or it is in the one-record format of an earlier version, which this one does not read)", len(data))
	}
	body, end, ok := readRecord(data, next)
	if !ok {
		return h, nil, nil, snapshotDamage(data, next)
	}
	if end != len(data) {
		return h, nil, nil, fmt.Errorf("is corrupt: %d unexpected bytes follow its records at byte %d", len(data)-end, end)
	}
	if err := json.Unmarshal(header, &h); err != nil {
		return h, nil, nil, fmt.Errorf("is unreadable: %v", err)
	}
	if h.Store == "" {
		return h, nil, nil, errors.New("names no store: it was written in a format of an earlier version, which this one does not read")
	}
	return h, header, body, nil
}

// snapshotDamage says what is wrong with the snapshot record at data[off:], which is
// not intact: cut short (a header incomplete, or a record running past the end), or
// corrupt.
func snapshotDamage(data []byte, off int) error {
	if len(data)-off < recordHeaderSize || recordRunsPast(data[off:]) {
		return fmt.Errorf("is truncated: it ends at byte %d, inside the record that starts at byte %d", len(data), off)
	}
	return fmt.Errorf("is corrupt at byte %d (checksum mismatch)", off)
}
