// JSON shapes of what the server answers and what the page sends. They are generated
// from the Rust types (crates/kg-server/src/payload/) into ./generated/payloads.ts; a
// Rust test fails when that file is stale. stored.ts holds helpers over the stored
// records.

export type * from './generated/payloads';
export * from './stored';

