package admission

import "testing"

func TestBytes(t *testing.T) {
	b := NewBytes(10, 15)
	for _, step := range []struct {
		client          string
		n               int64
		ok, byPerClient bool
	}{
		{"a", 6, true, false},
		{"a", 5, false, true}, // a would hold 11
		{"a", 4, true, false},
		{"b", 6, false, false}, // 16 in all
		{"b", 5, true, false},
	} {
		ok, perClient := b.Take(step.client, step.n)
		if ok != step.ok || perClient != step.byPerClient {
			t.Fatalf("Take(%s, %d) = %v, %v; want %v, %v", step.client, step.n, ok, perClient, step.ok, step.byPerClient)
		}
	}
	b.Give("a", 10)
	if all := b.Held(); all != 5 {
		t.Errorf("after a gave back: %d in all, want b's 5", all)
	}
	if ok, _ := b.Take("a", 10); !ok {
		t.Error("a's 10 refused after it gave them back")
	}
	b.Give("a", 10)
	if ok, _ := b.Take("b", 5); !ok {
		t.Error("b's second 5 refused with room")
	}
	b.Give("b", 10)
	if len(b.byClient) != 0 || b.used != 0 {
		t.Errorf("after everything was given back: %v, %d", b.byClient, b.used)
	}
}
