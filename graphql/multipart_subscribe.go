package graphql

// Apollo's multipart HTTP subscriptions: a request whose Accept allows
// multipart/mixed;subscriptionSpec=1.0 is answered as multipart/mixed, each
// result in a part as {"payload": result}, an empty object as a heartbeat while
// the subscription waits, and an error that ends it as {"payload": null,
// "errors": [...]}. Apollo Client's HttpLink sends that Accept for subscriptions.

// acceptsSubscriptionSpec reports whether Accept allows Apollo's multipart
// subscriptions.
func acceptsSubscriptionSpec(accept []acceptRange) bool {
	for _, r := range accept {
		if r.media == "multipart/mixed" && r.params["subscriptionspec"] != "" && r.q > 0 {
			return true
		}
	}
	return false
}

// multipartSubscription frames events as Apollo's clients read them: each part
// is followed at once by the delimiter, so that it is read when it arrives.
type multipartSubscription struct{}

const subscriptionBoundary = "\r\n--graphql"

func (multipartSubscription) contentType() string {
	return `multipart/mixed; boundary="graphql"; subscriptionSpec="1.0"`
}

func (multipartSubscription) start(buf []byte) []byte { return append(buf, subscriptionBoundary...) }
func (multipartSubscription) end(buf []byte) []byte   { return append(buf, "--\r\n"...) }

func (multipartSubscription) complete(buf []byte, _ string) []byte { return buf }

func (multipartSubscription) keepAlive(buf []byte) []byte {
	return append(append(buf, partHeader+"{}"...), subscriptionBoundary...)
}

func (multipartSubscription) next(buf []byte, _ string, result []byte) []byte {
	buf = append(append(append(buf, partHeader+`{"payload":`...), result...), '}')
	return append(buf, subscriptionBoundary...)
}

func (multipartSubscription) fail(buf []byte, _ string, errs ErrorList) []byte {
	buf = appendErrors(append(buf, partHeader+`{"payload":null,`...), errs)
	return append(append(buf, '}'), subscriptionBoundary...)
}
