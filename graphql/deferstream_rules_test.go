package graphql

import (
	"slices"
	"strings"
	"testing"
)

// The directives as schema.graphql declares them, for the test schemas below.
const deferStreamSDL = `
directive @defer(if: Boolean! = true, label: String) on FRAGMENT_SPREAD | INLINE_FRAGMENT
directive @stream(if: Boolean! = true, label: String, initialCount: Int! = 0) on FIELD
`

// petsSDL is the part of graphql-js's validation harness schema that its
// @defer and @stream cases use.
const petsSDL = deferStreamSDL + `
interface Pet { name: String }
type Dog implements Pet { name: String nickname: String }
type Human { name: String pets: [Pet] relatives: [Human]! }
type Query { dog: Dog human: Human pets: [Pet] }
`

// messagesSDL is the schema of graphql-js's root-field and valid-operation cases.
const messagesSDL = deferStreamSDL + `
type Message { body: String sender: String }
type SubscriptionRoot { subscriptionField: Message subscriptionListField: [Message] }
type MutationRoot { mutationField: Message mutationListField: [Message] }
type QueryRoot { message: Message messages: [Message] }
schema { query: QueryRoot mutation: MutationRoot subscription: SubscriptionRoot }
`

// TestDeferStreamRules runs graphql-js 17's cases for the @defer and @stream
// rules, each with the rule alone, as graphql-js's harness does: the same
// messages at the same places. Where graphql-js's latest also lists the
// fragment spreads leading to a directive in a subscription, the directive's
// own place is kept (graphql-js 17's alphas report that alone).
func TestDeferStreamRules(t *testing.T) {
	const (
		rootDefer   = "Defer directive cannot be used on root %s type %q."
		label       = "Defer/Stream directive label argument must be unique."
		subDefer    = "Defer directive not supported on subscription operations. Disable `@defer` by setting the `if` argument to `false`."
		subStream   = "Stream directive not supported on subscription operations. Disable `@stream` by setting the `if` argument to `false`."
		differing   = `Fields "name" conflict because they have differing stream directives. Use different aliases on the fields to fetch both if this was intentional.`
		messageFrag = "\nfragment myFragment on Message { body }"
	)
	schemas := map[string]*Schema{}
	for name, sdl := range map[string]string{"pets": petsSDL, "messages": messagesSDL} {
		s, err := ParseSchema(sdl)
		if err != nil {
			t.Fatal(err)
		}
		schemas[name] = s
	}
	tests := []struct {
		name, rule, schema, query string
		want                      []string // message at line:column, ...
	}{
		// DeferStreamDirectiveOnRootFieldRule
		{"defer spread on root query", "root", "messages", "{ ...rootQueryFragment @defer }\nfragment rootQueryFragment on QueryRoot { message { body } }", nil},
		{"defer inline fragment on root query", "root", "messages", "{ ... @defer { message { body } } }", nil},
		{"defer spread on root mutation", "root", "messages", "mutation {\n  ...rootFragment @defer\n}\nfragment rootFragment on MutationRoot { mutationField { body } }",
			[]string{`Defer directive cannot be used on root mutation type "MutationRoot". at 2:19`}},
		{"defer inline fragment on root mutation", "root", "messages", "mutation {\n  ... @defer { mutationField { body } }\n}",
			[]string{`Defer directive cannot be used on root mutation type "MutationRoot". at 2:7`}},
		{"defer spread on nested mutation field", "root", "messages", "mutation { mutationField { ... @defer { body } } }", nil},
		{"defer spread on root subscription", "root", "messages", "subscription {\n  ...rootFragment @defer\n}\nfragment rootFragment on SubscriptionRoot { subscriptionField { body } }",
			[]string{`Defer directive cannot be used on root subscription type "SubscriptionRoot". at 2:19`}},
		{"defer inline fragment on root subscription", "root", "messages", "subscription {\n  ... @defer { subscriptionField { body } }\n}",
			[]string{`Defer directive cannot be used on root subscription type "SubscriptionRoot". at 2:7`}},
		{"defer spread on nested subscription field", "root", "messages", "subscription { subscriptionField { ...nestedFragment @defer } }\nfragment nestedFragment on Message { body }", nil},
		{"stream on root query field", "root", "messages", "{ messages @stream { name } }", nil},
		{"stream on root mutation field", "root", "messages", "mutation {\n  mutationListField @stream { name }\n}",
			[]string{`Stream directive cannot be used on root mutation type "MutationRoot". at 2:21`}},
		{"stream in a fragment on root mutation", "root", "messages", "mutation { ...rootFragment }\nfragment rootFragment on MutationRoot {\n  mutationListField @stream { name }\n}",
			[]string{`Stream directive cannot be used on root mutation type "MutationRoot". at 3:21`}},
		{"stream on root subscription field", "root", "messages", "subscription {\n  subscriptionListField @stream { name }\n}",
			[]string{`Stream directive cannot be used on root subscription type "SubscriptionRoot". at 2:25`}},
		{"stream in a fragment on root subscription", "root", "messages", "subscription { ...rootFragment }\nfragment rootFragment on SubscriptionRoot {\n  subscriptionListField @stream { name }\n}",
			[]string{`Stream directive cannot be used on root subscription type "SubscriptionRoot". at 3:25`}},

		// DeferStreamDirectiveOnValidOperationsRule
		{"defer nested in a query", "operations", "messages", "{ message { ...myFragment @defer } }" + messageFrag, nil},
		{"defer inline in a query", "operations", "messages", "{ ... @defer { message { body } } }", nil},
		{"defer on a mutation field", "operations", "messages", "mutation { mutationField { ...myFragment @defer } }" + messageFrag, nil},
		{"defer inline on a mutation field", "operations", "messages", "mutation { mutationField { ... @defer { body } } }", nil},
		{"defer on a subscription field", "operations", "messages", "subscription {\n  subscriptionField { ...myFragment @defer }\n}" + messageFrag, []string{subDefer + " at 2:37"}},
		{"defer with if: true", "operations", "messages", "subscription {\n  subscriptionField { ...myFragment @defer(if: true) }\n}" + messageFrag, []string{subDefer + " at 2:37"}},
		{"defer with if: false", "operations", "messages", "subscription { subscriptionField { ...myFragment @defer(if: false) } }" + messageFrag, nil},
		{"defer in a query beside a subscription", "operations", "messages", "subscription MySubscription { subscriptionField { ...myFragment } }\nquery MyQuery { message { ...myFragment @defer } }" + messageFrag, nil},
		{"defer in a subscription beside a query", "operations", "messages", "subscription MySubscription {\n  subscriptionField { ...myFragment @defer }\n}\nquery MyQuery { message { ...myFragment @defer } }" + messageFrag, []string{subDefer + " at 2:37"}},
		{"defer with an invalid if", "operations", "messages", "subscription {\n  subscriptionField { ...myFragment @defer(if: \"Oops\") }\n}" + messageFrag, []string{subDefer + " at 2:37"}},
		{"defer under @skip", "operations", "messages", "subscription { subscriptionField { ...myFragment @skip @defer } }" + messageFrag, nil},
		{"defer under @skip(if: true)", "operations", "messages", "subscription { subscriptionField { ...myFragment @skip(if: true) @defer } }" + messageFrag, nil},
		{"defer under @skip(if: false)", "operations", "messages", "subscription {\n  subscriptionField { ...myFragment @skip(if: false) @defer }\n}" + messageFrag, []string{subDefer + " at 2:54"}},
		{"defer under @skip(if: $variable)", "operations", "messages", "subscription ($v: Boolean) { subscriptionField { ...myFragment @skip(if: $v) @defer } }" + messageFrag, nil},
		{"defer under @include", "operations", "messages", "subscription {\n  subscriptionField { ...myFragment @include @defer }\n}" + messageFrag, []string{subDefer + " at 2:46"}},
		{"defer under @include(if: true)", "operations", "messages", "subscription {\n  subscriptionField { ...myFragment @include(if: true) @defer }\n}" + messageFrag, []string{subDefer + " at 2:56"}},
		{"defer under @include(if: false)", "operations", "messages", "subscription { subscriptionField { ...myFragment @include(if: false) @defer } }" + messageFrag, nil},
		{"defer under @include(if: $variable)", "operations", "messages", "subscription ($v: Boolean) { subscriptionField { ...myFragment @include(if: $v) @defer } }" + messageFrag, nil},
		{"stream on a query field", "operations", "messages", "{ messages @stream { name } }", nil},
		{"stream on a mutation field", "operations", "messages", "mutation { mutationField { messages @stream } }", nil},
		{"stream in a fragment on a mutation field", "operations", "messages", "mutation { mutationField { ...myFragment } }\nfragment myFragment on Message { messages @stream }", nil},
		{"stream on a subscription field", "operations", "messages", "subscription {\n  subscriptionField {\n    messages @stream\n  }\n}", []string{subStream + " at 3:14"}},
		{"stream in a fragment on a subscription field", "operations", "messages", "subscription { subscriptionField { ...myFragment } }\nfragment myFragment on Message {\n  messages @stream\n}", []string{subStream + " at 3:12"}},
		{"stream in a fragment of a query beside a subscription", "operations", "messages", "subscription MySubscription { subscriptionField { message } }\nquery MyQuery { message { ...myFragment } }\nfragment myFragment on Message { messages @stream }", nil},
		{"stream in a fragment of a subscription beside a query", "operations", "messages", "query MyQuery { message { ...myFragment } }\nsubscription MySubscription { subscriptionField { message { ...myFragment } } }\nfragment myFragment on Message {\n  messages @stream\n}", []string{subStream + " at 4:12"}},
		{"stream in a fragment spread twice in a subscription", "operations", "messages", "subscription MySubscription { subscriptionField { message { ...myOtherFragment ...myFragment } } }\nfragment myOtherFragment on Message { ...myFragment }\nfragment myFragment on Message {\n  messages @stream\n}", []string{subStream + " at 4:12"}},

		// DeferStreamDirectiveLabelRule
		{"defers with no label", "label", "pets", "{ dog { ...dogFragmentA @defer ...dogFragmentB @defer } }\nfragment dogFragmentA on Dog { name }\nfragment dogFragmentB on Dog { nickname }", nil},
		{"defers, one with a label", "label", "pets", "{ dog { ...dogFragmentA @defer(label: \"fragA\") ...dogFragmentB @defer } }\nfragment dogFragmentA on Dog { name }\nfragment dogFragmentB on Dog { nickname }", nil},
		{"defer with a variable label", "label", "pets", "query($label: String) {\n  dog {\n    ...dogFragmentA @defer(label: $label)\n    ...dogFragmentB @defer(label: \"fragA\")\n  }\n}\nfragment dogFragmentA on Dog { name }\nfragment dogFragmentB on Dog { nickname }",
			[]string{`Directive "defer"'s label argument must be a static string. at 3:21`}},
		{"defers with different labels", "label", "pets", "{ dog { ...dogFragmentA @defer(label: \"fragB\") ...dogFragmentB @defer(label: \"fragA\") } }\nfragment dogFragmentA on Dog { name }\nfragment dogFragmentB on Dog { nickname }", nil},
		{"defers with the same label", "label", "pets", "{\n  dog {\n    ...dogFragmentA @defer(label: \"fragA\")\n    ...dogFragmentB @defer(label: \"fragA\")\n  }\n}\nfragment dogFragmentA on Dog { name }\nfragment dogFragmentB on Dog { nickname }",
			[]string{label + " at 3:21, 4:21"}},
		{"defer and stream with no label", "label", "pets", "{ dog { ...dogFragment @defer } pets @stream(initialCount: 0) @stream { name } }\nfragment dogFragment on Dog { name }", nil},
		{"stream with a variable label", "label", "pets", "query ($label: String!) {\n  dog { ...dogFragment @defer }\n  pets @stream(initialCount: 0) @stream(label: $label) { name }\n}\nfragment dogFragment on Dog { name }",
			[]string{`Directive "stream"'s label argument must be a static string. at 3:33`}},
		{"defer and stream with the same label", "label", "pets", "{\n  dog { ...dogFragment @defer(label: \"MyLabel\") }\n  pets @stream(initialCount: 0) @stream(label: \"MyLabel\") { name }\n}\nfragment dogFragment on Dog { name }",
			[]string{label + " at 2:24, 3:33"}},

		// StreamDirectiveOnListFieldRule
		{"stream on a list field", "list", "pets", "fragment objectFieldSelection on Human { pets @stream(initialCount: 0) { name } }", nil},
		{"stream on a non-null list field", "list", "pets", "fragment objectFieldSelection on Human { relatives @stream(initialCount: 0) { name } }", nil},
		{"other directives on a list field", "list", "pets", "fragment objectFieldSelection on Human { pets @include(if: true) { name } }", nil},
		{"other directives on a non-list field", "list", "pets", "fragment objectFieldSelection on Human { pets { name @include(if: true) } }", nil},
		{"a misplaced stream", "list", "pets", "fragment objectFieldSelection on Human { ... @stream(initialCount: 0) { name } }", nil},
		{"stream on a non-list field", "list", "pets", "fragment objectFieldSelection on Human {\n  name @stream(initialCount: 0)\n}",
			[]string{`Directive "@stream" cannot be used on non-list field "Human.name". at 2:8`}},

		// OverlappingFieldsCanBeMergedRule, its @stream cases
		{"the same stream twice", "overlap", "pets", `fragment f on Dog { name @stream(label: "streamLabel", initialCount: 1) name @stream(label: "streamLabel", initialCount: 1) }`, nil},
		{"streams with different labels", "overlap", "pets", "fragment conflictingArgs on Dog {\n  name @stream(label: \"streamLabel\", initialCount: 1)\n  name @stream(label: \"anotherLabel\", initialCount: 1)\n}",
			[]string{differing + " at 2:3, 3:3"}},
		{"streams with different initialCount", "overlap", "pets", "fragment conflictingArgs on Dog {\n  name @stream(label: \"streamLabel\", initialCount: 1)\n  name @stream(label: \"streamLabel\", initialCount: 2)\n}",
			[]string{differing + " at 2:3, 3:3"}},
		{"a stream and none", "overlap", "pets", "fragment conflictingArgs on Dog {\n  name\n  name @stream(initialCount: 1)\n}",
			[]string{differing + " at 2:3, 3:3"}},
	}
	rules := map[string]ruleFunc{
		"root":       deferStreamDirectiveOnRootFieldRule,
		"operations": deferStreamDirectiveOnValidOperationsRule,
		"label":      deferStreamDirectiveLabelRule,
		"list":       streamDirectiveOnListFieldRule,
		"overlap":    overlappingFieldsCanBeMergedRule,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := parseDoc(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range validate(schemas[tt.schema], doc, []ruleFunc{rules[tt.rule]}) {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s\ngot  %q\nwant %q", tt.query, got, tt.want)
			}
		})
	}
}

// TestDeferStreamInQuartetSchema checks the directives with every rule, in the
// test schema as a client would write them: a wrong one is refused with its
// message, a right one passes.
func TestDeferStreamInQuartetSchema(t *testing.T) {
	s, _ := newTestSchema(t)
	tests := []struct{ query, want string }{
		{`{ users { id ... @defer(label: "a") { name } } }`, ""},
		{`{ users @stream(initialCount: 1) { id } }`, ""},
		{`query ($n: Int!) { users @stream(initialCount: $n, if: false) { id } }`, ""},
		{`{ user(id: 1) { name @stream } }`, `Directive "@stream" cannot be used on non-list field "User.name".`},
		{`{ users @defer { id } }`, `Directive "@defer" may not be used on FIELD.`},
		{`{ ... on Query @stream { users { id } } }`, `Directive "@stream" may not be used on INLINE_FRAGMENT.`},
		{`{ users @stream(initialCount: "1") { id } }`, `Int cannot represent non-integer value: "1"`},
		{`mutation { ... @defer { deleteUser(id: 1) } }`, `Defer directive cannot be used on root mutation type "Mutation".`},
		{`{ a: users @stream { id } a: users { id } }`, `Fields "a" conflict because they have differing stream directives.`},
	}
	for _, tt := range tests {
		doc, err := parseDoc(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range s.validate(doc) {
			got = append(got, e.Message)
		}
		if tt.want == "" && got != nil || tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tt.want)) {
			t.Errorf("%s: got %q, want %q", tt.query, got, tt.want)
		}
	}
}
