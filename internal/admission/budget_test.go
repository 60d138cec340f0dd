package admission

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestBudget(t *testing.T) {
	var log strings.Builder
	b := NewBudget("widgets", 10, 15, slog.New(slog.NewTextHandler(&log, nil)))
	for _, step := range []struct {
		client   string
		n        int64
		ok       bool
		byClient bool
	}{
		{"a", 6, true, false},
		{"a", 5, false, true}, // a would hold 11
		{"a", 4, true, false},
		{"b", 6, false, false}, // 16 in all
		{"b", 5, true, false},
	} {
		err := b.Claim(step.client, step.n)
		var refused *Refused
		if (err == nil) != step.ok || err != nil && (!errors.As(err, &refused) || refused.ByClient() != step.byClient || refused.Client != step.client) {
			t.Fatalf("Claim(%s, %d) = %v; want ok %v, by client %v", step.client, step.n, err, step.ok, step.byClient)
		}
	}
	b.Release("a", 10)
	if all := b.Held(); all != 5 {
		t.Errorf("after a gave back: %d in all, want b's 5", all)
	}
	if err := b.Claim("a", 10); err != nil {
		t.Errorf("a's 10 refused after it gave them back: %v", err)
	}
	b.Release("a", 10)
	b.Release("b", 5)
	if len(b.byClient) != 0 || b.used != 0 {
		t.Errorf("after everything was given back: %v, %d", b.byClient, b.used)
	}
	b.Close()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `msg="widgets refused: over budget" count=1 last_client=a limit=10 bound="per client"`) ||
		!strings.Contains(lines[1], `count=1 last_client=b limit=15 bound=total`) {
		t.Errorf("log: the first refusal at once, the rest as a count at Close; got\n%s", log.String())
	}
	var none *Budget
	if err := none.Claim("a", 1<<40); err != nil || none.Held() != 0 {
		t.Errorf("a nil budget bounds nothing: %v", err)
	}
	none.Release("a", 1)
}

// TestBudgetZeroBounds: a bound of 0 is no bound of that kind.
func TestBudgetZeroBounds(t *testing.T) {
	perClientOnly := NewBudget("x", 2, 0, nil)
	for _, c := range []string{"a", "b", "c"} {
		if err := perClientOnly.Claim(c, 2); err != nil {
			t.Fatalf("total 0: %v", err)
		}
	}
	totalOnly := NewBudget("x", 0, 3, nil)
	if err := totalOnly.Claim("a", 3); err != nil {
		t.Fatalf("per client 0: %v", err)
	}
	if err := totalOnly.Claim("b", 1); err == nil {
		t.Fatal("past the total: taken")
	}
}
