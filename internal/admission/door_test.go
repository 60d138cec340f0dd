package admission

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// newDoor returns a door of slots slots, each client holding them all, waiting
// waiting, with body budgets of 100 bytes a client and 150 in all.
func newDoor(slots, waiting int) *Door {
	l := Defaults()
	l.WorkSlots, l.ClientSlots, l.ClientWaiting = slots, slots, waiting
	l.ClientBodyBytes, l.TotalBodyBytes = 100, 150
	l.ClientAnswerBytes, l.TotalAnswerBytes = 3*AnswerGrace, 5*AnswerGrace
	d := NewDoor(l, Proxies{}, nil)
	d.maxBody = 60
	return d
}

// enter is Enter for the client the request's address names, with a refusal
// that answers 429.
func enter(d *Door, w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func(), error) {
	aw, err := d.Enter(w, r, Of(r.RemoteAddr), func(w http.ResponseWriter, _ *http.Request, refused *Refused) {
		http.Error(w, refused.Error(), http.StatusTooManyRequests)
	})
	if err != nil {
		return nil, nil, err
	}
	return aw, aw.Done, nil
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
	_, done, err := enter(d, httptest.NewRecorder(), r)
	if err != nil {
		t.Fatal(err)
	}
	if data, whole, err := r.Body.(*body).Bytes(); !whole || err != nil || string(data) != `{"name":"x"}` {
		t.Errorf("Bytes = %q, %v, %v", data, whole, err)
	}
	if _, held, _ := d.Stats(); held == 0 {
		t.Error("no body bytes counted while the request runs")
	}
	done()
	if work, held, _ := d.Stats(); held != 0 || work.Running != 0 {
		t.Errorf("after done: %+v, %d body bytes", work, held)
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
	_, done, err := enter(d, httptest.NewRecorder(), r)
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
// *Refused and holds nothing; another client still has room, up to the total.
// (A client with the queue to itself reads nothing ahead: it does not wait.)
func TestEnterBoundsBodies(t *testing.T) {
	d := newDoor(4, 4)
	d.Queue.sharedUntil = time.Now().AddDate(1, 0, 0)
	body := strings.Repeat("a", 50) // 51 bytes counted: the extra byte finds the end
	_, done, err := enter(d, httptest.NewRecorder(), post(body))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	_, _, err = enter(d, httptest.NewRecorder(), post(body))
	var refused *Refused
	if !errors.As(err, &refused) || !strings.Contains(refused.Error(), "192.0.2.1") {
		t.Fatalf("second body from the client: %v, want a *Refused naming it", err)
	}
	other := post(body)
	other.RemoteAddr = "198.51.100.7:1"
	_, otherDone, err := enter(d, httptest.NewRecorder(), other)
	if err != nil {
		t.Fatalf("another client's body: %v", err)
	}
	otherDone()
	if _, held, _ := d.Stats(); held != 51 {
		t.Errorf("%d bytes held, want the one waiting body's 51", held)
	}
}

// TestSlotGivenBackAtTheFirstWrite: a request's slot is free once its answer starts,
// so the next request waits no longer than the work.
func TestSlotGivenBackAtTheFirstWrite(t *testing.T) {
	d := newDoor(1, 1)
	w, done, err := enter(d, httptest.NewRecorder(), post(""))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if work, _, _ := d.Stats(); work.Running != 1 {
		t.Fatal("the request holds no slot")
	}
	w.Write([]byte("answer"))
	if work, _, _ := d.Stats(); work.Running != 0 {
		t.Errorf("after the first write: %+v, want the slot free", work)
	}
}

// TestSlot: a client with as much waiting as it may is refused at once with a
// *Refused naming it; a door without a queue runs work as it comes.
func TestSlot(t *testing.T) {
	d := newDoor(1, 1)
	ctx := context.Background()
	a, err := d.Slot(ctx, "a") // alone: no slot counted
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Slot(ctx, "b") // a newcomer finds its share at once
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error)
	go func() {
		release, err := d.Slot(ctx, "b")
		if err == nil {
			release()
		}
		waited <- err
	}()
	for work, _, _ := d.Stats(); work.Waiting == 0; work, _, _ = d.Stats() {
		runtime.Gosched()
	}
	var refused *Refused
	if _, err := d.Slot(ctx, "b"); !errors.As(err, &refused) || !strings.Contains(err.Error(), "from b:") {
		t.Errorf("past the waiting bound: %v, want a *Refused naming b", err)
	}
	b()
	if err := <-waited; err != nil {
		t.Errorf("the waiting work: %v", err)
	}
	a()
	if work, _, _ := d.Stats(); work != (Stats{}) {
		t.Errorf("after every release: %+v", work)
	}
	var none Door
	if r, err := none.Slot(ctx, "a"); err != nil {
		t.Errorf("no queue: %v", err)
	} else {
		r()
	}
}

// TestLoneClientReadsNothingAhead: a client with the queue to itself does not
// wait, so its body is left to the handler, not read ahead and counted.
func TestLoneClientReadsNothingAhead(t *testing.T) {
	d := newDoor(4, 4)
	_, first, err := enter(d, httptest.NewRecorder(), post(`{"a":1}`)) // begins the spell
	if err != nil {
		t.Fatal(err)
	}
	r := post(`{"b":2}`)
	_, done, err := enter(d, httptest.NewRecorder(), r)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Body.(*body); ok {
		t.Error("the lone client's body was read ahead")
	}
	if _, held, _ := d.Stats(); held != int64(len(`{"a":1}`)+1) {
		t.Errorf("%d body bytes held, want the first request's alone", held)
	}
	done()
	first()
}

// TestAnswersBudget: an answer past AnswerGrace is counted while the request runs
// and given back when it is done; one that does not fit the client's budget is
// answered with the refusal instead, its status and entity headers dropped and
// the others (CORS's) kept, and the handler's write fails.
func TestAnswersBudget(t *testing.T) {
	d := newDoor(4, 4) // answers: 3×AnswerGrace a client, 5× in all
	big := bytes.Repeat([]byte("a"), 2*AnswerGrace)

	rec := httptest.NewRecorder()
	w, done, err := enter(d, rec, post(""))
	if err != nil {
		t.Fatal(err)
	}
	w.WriteHeader(http.StatusCreated)
	if n, err := w.Write(big); err != nil || n != len(big) {
		t.Fatalf("an answer within the budget: %d, %v", n, err)
	}
	if _, _, held := d.Stats(); held != int64(len(big)) {
		t.Errorf("%d answer bytes counted while the request runs, want %d", held, len(big))
	}

	refused := httptest.NewRecorder()
	w2, done2, err := enter(d, refused, post(""))
	if err != nil {
		t.Fatal(err)
	}
	w2.Header().Set("Access-Control-Allow-Origin", "https://app.example")
	w2.Header().Set("Etag", `"x"`)
	w2.WriteHeader(http.StatusOK)
	if _, err := w2.Write(big); err == nil {
		t.Error("a write past the client's answers budget succeeded")
	}
	done2()
	if refused.Code != http.StatusTooManyRequests || !strings.Contains(refused.Body.String(), "answer bytes waiting to be read from 192.0.2.1") ||
		refused.Header().Get("Etag") != "" || refused.Header().Get("Access-Control-Allow-Origin") == "" {
		t.Errorf("refused answer: %d %v %q", refused.Code, refused.Header(), refused.Body.String())
	}
	done()
	if rec.Code != http.StatusCreated || rec.Body.Len() != len(big) {
		t.Errorf("the answer within the budget: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if _, _, held := d.Stats(); held != 0 {
		t.Errorf("%d answer bytes counted after both requests were done", held)
	}

	small := httptest.NewRecorder()
	w3, done3, _ := enter(d, small, post(""))
	w3.WriteHeader(http.StatusNoContent)
	done3() // no body: the status goes out when the request is done
	if small.Code != http.StatusNoContent {
		t.Errorf("an answer without a body: %d", small.Code)
	}
}
