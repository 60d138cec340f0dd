package main

import (
	_ "embed"
	"net/http"
)

// The contracts of the REST and GraphQL surfaces, one GET each; OData's is
// /api/$metadata.
//
// openapi.json is written by hand, once, and embedded. It cannot drift unnoticed:
// TestOpenAPIRoutes holds its operations to the route table (addRoutes), and
// TestOpenAPIAgainstAnswers (e2e/openapi.test.mjs) validates every REST golden answer
// and live answers, errors included, against the schema of their route and status.
// Generating it from the route table instead would still need the parameters, bodies
// and answers written somewhere by hand: the route table knows methods and paths only.

//go:embed openapi.json
var openAPIDocument []byte

// openAPI answers GET /openapi.json: the OpenAPI 3.1 document of the REST surface.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDocument)
}

// graphQLSchema answers GET /graphql/schema.graphql: the SDL /graphql serves.
func (s *Server) graphQLSchema(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(schemaSDL))
}
