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

// journalStep is what a journal file grows by: a cut then shows (the size is no
// longer whole steps), for one fsync more a step; unwritten space costs no disk.
const journalStep = 1 << 20

func roundUp(n, step int64) int64 { return (n + step - 1) / step * step }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Records are framed as [length u32][crc32c(payload) u32][crc32c(first 8 bytes) u32]
// [payload], little endian. The header's own checksum lets recovery trust a length,
// and so tell a record cut short by a crash (tornTail) from a damaged one.
const recordHeaderSize = 12

func appendRecord(b, payload []byte) []byte {
	var h [recordHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(h[:8], castagnoli))
	return append(append(b, h[:]...), payload...)
}

// payloadSize returns the payload length data's intact record header announces.
func payloadSize(data []byte) (int, bool) {
	if len(data) < recordHeaderSize || crc32.Checksum(data[:8], castagnoli) != binary.LittleEndian.Uint32(data[8:]) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(data)), true
}

// readRecord returns the whole, intact record at data[off:], if there is one.
func readRecord(data []byte, off int) (payload []byte, next int, ok bool) {
	n, ok := payloadSize(data[off:])
	if !ok || n < 0 || n > len(data)-off-recordHeaderSize { // n is from disk: no sum to overflow
		return nil, off, false
	}
	end := off + recordHeaderSize + n
	payload = data[off+recordHeaderSize : end]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[off+4:]) {
		return nil, off, false
	}
	return payload, end, true
}

// recordRunsPast reports whether data starts with an intact record header whose
// record needs more bytes than data holds.
func recordRunsPast(data []byte) bool {
	n, ok := payloadSize(data)
	return ok && len(data)-recordHeaderSize < n
}

func journalName(gen uint64) string { return fmt.Sprintf("journal-%016d.log", gen) }

// journalHeader is a journal's first record: which journal of which store, and the
// step its file grows by (none in earlier versions' journals, which are refused).
type journalHeader struct {
	Journal uint64 `json:"journal"`
	Store   string `json:"store"`
	Step    int64  `json:"step"`
}

// journalHeaderStart tells a journal header from a record (see the package doc).
var journalHeaderStart = []byte(`{"journal":`)

// createJournal durably creates journal gen of store holding records (framed)
// after its header, replacing any there was, and returns it open for writing, with
// where its records end.
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

// writeJournal writes journal gen as createJournal does, under its temporary name,
// zeros to whole steps, fsynced; a file it fails to write is removed.
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

func journalTemp(dir string, gen uint64) string {
	return filepath.Join(dir, journalName(gen)+".tmp")
}

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

// writeFileSync writes a file (O_EXCL or O_TRUNC, flag says) and makes it durable.
func writeFileSync(name string, data []byte, flag int) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
		// Harmless: a journal back after a crash is older than the snapshot's.
		log.Error("making the removal of old journals durable", "dir", dir, "error", err)
	}
}

// journalGens lists DIR's journal generations in ascending order.
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

// Has reports whether dir holds a store: a snapshot or a journal (without its
// snapshot a damaged one). An initialisation cut short leaves only temporary files.
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

// A snapshot file is two records: a header, a JSON object of the snapshot's
// generation (the first journal not in it), the host's meta and the store's id;
// and the host's body.
type snapshotHeader struct {
	Gen   uint64 `json:"gen"`
	Store string `json:"store"`
}

// snapshotHeaderOf returns meta, a JSON object, with "gen" added first and "store" last.
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

// writeSnapshot atomically replaces DIR/snapshot with snapshot gen of store.
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
	if err := writeFileSync(tmp, appendRecord(appendRecord(nil, header), body), os.O_TRUNC); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "snapshot")); err != nil {
		return err
	}
	return syncDir(dir)
}

// readSnapshot checks a snapshot file and returns its two records and what its
// header says; earlier versions' formats are refused.
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
// not intact: cut short, or corrupt.
func snapshotDamage(data []byte, off int) error {
	if len(data)-off < recordHeaderSize || recordRunsPast(data[off:]) {
		return fmt.Errorf("is truncated: it ends at byte %d, inside the record that starts at byte %d", len(data), off)
	}
	return fmt.Errorf("is corrupt at byte %d (checksum mismatch)", off)
}
