// Every table, by the kind of database it lives in (schema/STORAGE.md).
export * from './categories';
export * from './global';
export * from './shard';
