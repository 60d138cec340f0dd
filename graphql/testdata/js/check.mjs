// Used by the Go test TestIntrospectionRoundTrip.
//   node check.mjs query              prints graphql-js's standard introspection query,
//                                     with every optional part switched on
//   node check.mjs print FILE.json    prints printSchema(buildClientSchema(data of FILE))
//   node check.mjs sdl FILE.graphql   prints printSchema(buildSchema(FILE))
import { readFileSync } from 'node:fs';
import { buildClientSchema, buildSchema, getIntrospectionQuery, printSchema } from 'graphql';

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
  default:
    throw new Error('usage: check.mjs query | print FILE | sdl FILE');
}
