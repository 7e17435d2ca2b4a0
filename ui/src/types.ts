// JSON shapes of the server's answers. The payloads are generated from the Rust types
// that build them (crates/kg-server/src/payload.rs) into ./generated/payloads.ts; a
// Rust test fails when that file is stale. The stored records are written by hand in
// stored.ts (which the generated file imports): kg-core keeps nodes and edges as
// open-ended JSON objects, passed through as they are.

export type * from './generated/payloads';
export * from './stored';

