package admission

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"quartet/internal/fairqueue"
)

func newDoor(slots, waiting int) *Door {
	return New(fairqueue.New(slots, slots, waiting), Options{
		Waiting: waiting, ClientBodyBytes: 100, TotalBodyBytes: 150, MaxBodyBytes: 60})
}

func post(body string) *http.Request {
	r := httptest.NewRequest("POST", "/", strings.NewReader(body))
	r.RemoteAddr = "192.0.2.1:1234"
	return r
}

// TestEnterReadsTheBodyAhead: the handler gets the whole body, from memory, and what
// it held is counted until the request is done.
func TestEnterReadsTheBodyAhead(t *testing.T) {
	d := newDoor(1, 1)
	r := post(`{"name":"x"}`)
	_, done, err := d.Enter(httptest.NewRecorder(), r)
	if err != nil {
		t.Fatal(err)
	}
	if data, whole, err := r.Body.(*body).Bytes(); !whole || err != nil || string(data) != `{"name":"x"}` {
		t.Errorf("Bytes = %q, %v, %v", data, whole, err)
	}
	if held := d.Stats().BodyBytes; held == 0 {
		t.Error("no body bytes counted while the request runs")
	}
	done()
	if st := d.Stats(); st.BodyBytes != 0 || st.Running != 0 {
		t.Errorf("after done: %+v", st)
	}
}

// TestBodyPastTheLimit: a body of unknown length longer than the limit is read
// ahead only to the limit and a byte, and is not taken as whole: a Read goes on
// into the rest of it.
func TestBodyPastTheLimit(t *testing.T) {
	d := newDoor(1, 1)
	long := strings.Repeat("a", 200)
	r := post(long)
	r.ContentLength = -1
	_, done, err := d.Enter(httptest.NewRecorder(), r)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if data, whole, err := r.Body.(*body).Bytes(); whole || err != nil || len(data) != 61 {
		t.Errorf("Bytes: %d bytes, whole %v, %v; want the limit and a byte, not whole", len(data), whole, err)
	}
	if all, err := io.ReadAll(r.Body); err != nil || string(all) != long {
		t.Errorf("Read: %d bytes, %v; want all %d", len(all), err, len(long))
	}
}

// TestEnterBoundsBodies: past a client's budget its next body is refused with a
// *Busy and holds nothing; another client still has room, up to the total.
func TestEnterBoundsBodies(t *testing.T) {
	d := newDoor(4, 4)
	body := strings.Repeat("a", 50) // 51 bytes counted: the extra byte finds the end
	_, done, err := d.Enter(httptest.NewRecorder(), post(body))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	_, _, err = d.Enter(httptest.NewRecorder(), post(body))
	var busy *Busy
	if !errors.As(err, &busy) || !strings.Contains(busy.Error(), "192.0.2.1") {
		t.Fatalf("second body from the client: %v, want a *Busy naming it", err)
	}
	other := post(body)
	other.RemoteAddr = "198.51.100.7:1"
	_, otherDone, err := d.Enter(httptest.NewRecorder(), other)
	if err != nil {
		t.Fatalf("another client's body: %v", err)
	}
	otherDone()
	if held := d.Stats().BodyBytes; held != 51 {
		t.Errorf("%d bytes held, want the one waiting body's 51", held)
	}
}

// TestSlotGivenBackAtTheFirstWrite: a request's slot is free once its answer starts,
// so the next request waits no longer than the work.
func TestSlotGivenBackAtTheFirstWrite(t *testing.T) {
	d := newDoor(1, 1)
	w, done, err := d.Enter(httptest.NewRecorder(), post(""))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if d.Stats().Running != 1 {
		t.Fatal("the request holds no slot")
	}
	w.Write([]byte("answer"))
	if st := d.Stats(); st.Running != 0 {
		t.Errorf("after the first write: %+v, want the slot free", st)
	}
}

// TestWork: work runs in a slot; a client with as much waiting as it may is refused
// at once; a nil door runs work as it comes.
func TestWork(t *testing.T) {
	d := newDoor(1, 1)
	ran := false
	if err := d.Work(context.Background(), "a", func() { ran = d.Stats().Running == 1 }); err != nil || !ran {
		t.Fatalf("Work: %v, ran in a slot %v", err, ran)
	}
	release, err := d.queue.Acquire(context.Background(), "holder")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	waiting := make(chan error)
	go func() { waiting <- d.Work(context.Background(), "a", func() {}) }()
	for d.Stats().Waiting == 0 {
		runtime.Gosched()
	}
	var busy *Busy
	if err := d.Work(context.Background(), "a", func() { t.Error("ran past the waiting bound") }); !errors.As(err, &busy) {
		t.Errorf("a second waiting piece of work: %v, want a *Busy", err)
	}
	release()
	if err := <-waiting; err != nil {
		t.Errorf("the waiting work: %v", err)
	}
	var none *Door
	if err := none.Work(context.Background(), "a", func() { ran = false }); err != nil || ran {
		t.Errorf("nil door: %v, ran %v", err, !ran)
	}
}
