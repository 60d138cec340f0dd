package testkit

import (
	"runtime"
	"testing"
	"time"
)

// EventuallyWait is how long Eventually polls before it fails: long enough that
// only a broken program, not a loaded machine, reaches it.
const EventuallyWait = 20 * time.Second * RaceSlowdown

// Eventually polls cond until it returns nil, failing the test with cond's last
// error if EventuallyWait passes first. It guards against a hang; it asserts
// nothing about how long the wait took. Call it from the test's goroutine. It yields
// before it sleeps, so a wait for another goroutine's next step costs microseconds.
func Eventually(t testing.TB, cond func() error) {
	t.Helper()
	poll(t, EventuallyWait, cond)
}

func poll(t testing.TB, wait time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for i := 0; ; i++ {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still, after %v: %v", wait, err)
		}
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}
