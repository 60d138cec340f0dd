// Used by the Go test TestIntrospectionRoundTrip.
//   node check.mjs query              prints graphql-js's standard introspection query,
//                                     with every optional part switched on
//   node check.mjs print FILE.json    prints printSchema(buildClientSchema(data of FILE))
//   node check.mjs sdl FILE.graphql   prints printSchema(buildSchema(FILE))
//   node check.mjs directives FILE.json
//                                     prints the directives of buildClientSchema(data of FILE)
//                                     that graphql-js names as its own (isSpecifiedDirective)
//   node check.mjs directives          prints graphql-js's own built-in directives
// (used by TestBuiltinDirectivesMatchGraphQLJS)
import { readFileSync } from 'node:fs';
import {
  GraphQLSchema, buildClientSchema, buildSchema, getIntrospectionQuery, isSpecifiedDirective,
  printIntrospectionSchema, printSchema, version,
} from 'graphql';

// printDirectives prints directives in schema order, as printSchema would print
// them (printIntrospectionSchema prints the built-in ones, and the introspection
// types, which are graphql-js's own on both sides and are left out here).
function printDirectives(directives) {
  const printed = printIntrospectionSchema(new GraphQLSchema({ directives }));
  return printed.split('\n\n').filter((block) => /^directive @/m.test(block)).join('\n\n') + '\n';
}

const [mode, file] = process.argv.slice(2);
switch (mode) {
  case 'query':
    process.stdout.write(getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
    }));
    break;
  case 'print': {
    const result = JSON.parse(readFileSync(file, 'utf8'));
    if (result.errors) throw new Error(JSON.stringify(result.errors));
    process.stdout.write(printSchema(buildClientSchema(result.data)) + '\n');
    break;
  }
  case 'sdl':
    process.stdout.write(printSchema(buildSchema(readFileSync(file, 'utf8'))) + '\n');
    break;
  case 'directives':
    if (file) {
      const result = JSON.parse(readFileSync(file, 'utf8'));
      if (result.errors) throw new Error(JSON.stringify(result.errors));
      process.stdout.write(printDirectives(buildClientSchema(result.data).getDirectives().filter(isSpecifiedDirective)));
    } else {
      process.stdout.write(printDirectives(new GraphQLSchema({}).getDirectives()));
    }
    break;
  case 'version':
    process.stdout.write(version + '\n');
    break;
  default:
    throw new Error('usage: check.mjs query | print FILE | sdl FILE | directives [FILE] | version');
}
