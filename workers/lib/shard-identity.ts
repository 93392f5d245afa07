/**
 * Writes which shard a database is (its `shard_identity` row, which every shard row's id
 * carries), once, after its migrations: by `npm start`, the tests and `npm run deploy`
 * (scripts/migrate.ts). A database already stamped with another number is refused: it is bound
 * under the wrong name, and its ids would collide with another shard's.
 */
export async function stampShard(database: D1Database, shard: number): Promise<void> {
  await database.prepare('INSERT INTO shard_identity (only, shard) VALUES (1, ?) ON CONFLICT (only) DO NOTHING').bind(shard).run();
  const stamped = await database.prepare('SELECT shard FROM shard_identity').first<{ shard: number }>();
  if (stamped?.shard !== shard) throw new Error(`The database bound as SHARD_${shard} is shard ${stamped?.shard}: bind each shard under its own number`);
}
