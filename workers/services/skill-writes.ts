import { z } from 'zod';
import type { Actor } from '../auth/actor';
import type { Env, ShardDb } from '../env';
import { AppError } from '../errors';
import { loadBundle } from '../lib/bundle-store';
import { globalDbOf } from '../lib/db';
import { barFor, barOf, guardedWrite, guardOn, type AuthoredSkill } from './skill-guard';
import {
  authorSkill,
  installContent,
  installedQuery,
  requireSkill,
  restoredContent,
  sameContent,
  RestoreResult,
  versionNumberOf,
  versionWithGuard,
  writeVersion,
  type AuthorSkillBody,
  type InstallBody,
  type NewContent,
} from './skills';

/**
 * The writes that change a skill's current version, each through the version guard
 * (skill-guard.ts): a write of the user's own content, an install over an installed skill (the
 * marketplace, an artifact, a registry or an archive) and a restore. With the guard on and the
 * current version carrying eval cases, the new version is held back until its eval passes.
 */

/** PUT /skills/:slug. The current version's bundle is read once: for the guard's cases and for the files a write keeps. */
export async function writeAuthoredSkill(
  db: ShardDb,
  env: Env,
  actor: Actor,
  slug: string,
  body: AuthorSkillBody,
  grantToken: string | undefined,
): Promise<AuthoredSkill> {
  const on = await guardOn(db, actor.workspaceId);
  const [current] = await installedQuery(db, actor, slug);
  const files = current ? await loadBundle(env.BUCKET, current.version.storagePath) : null;
  // The new version is the current one's files with these written over them: without them it would lose the rest.
  if (current && !files)
    throw new AppError('INTERNAL_ERROR', 500, `The files of version ${current.version.versionNumber} of "${slug}" could not be read; nothing was written`);
  const bar = on && current ? await barOf(slug, current, files) : null;
  return guardedWrite(db, env, actor, slug, bar, grantToken, (hold) => authorSkill(db, env.BUCKET, actor, slug, body, files ?? [], hold));
}

/** Installs `content` as the skill's new version (none if it is the current one); over a guarded version it is held back. */
export async function installGuarded(db: ShardDb, env: Env, actor: Actor, slug: string, content: NewContent, grantToken: string | undefined) {
  const bar = await barFor(db, env, actor, slug, content);
  return guardedWrite(db, env, actor, slug, bar, grantToken, (hold) => writeVersion(db, actor, slug, content, false, 'skill.installed', hold));
}

/** POST /skills/:slug/install: from the marketplace, an artifact bundle or another registry. */
export async function installSkill(db: ShardDb, env: Env, actor: Actor, slug: string, body: InstallBody, grantToken: string | undefined) {
  return installGuarded(db, env, actor, slug, await installContent(db, env, actor, slug, body), grantToken);
}

/**
 * POST /skills/:slug/versions/:versionNumber/restore: a new version carrying the old content;
 * later versions stay in the history. Content that is the current version's already is restored
 * at once, whatever the guard made of the old version. A version being evaluated is refused (its
 * eval decides it; the owner may promote it). One that passed its eval (accepted) is restored at once; any
 * other (refused, overridden by the owner, or never measured) is held back like a write when the
 * guard is on and the current version carries cases. Without that, a refused one stays refused:
 * only the owner's promote makes it current.
 */
export async function restoreVersion(
  db: ShardDb,
  env: Env,
  actor: Actor,
  slug: string,
  rawVersion: string,
  grantToken: string | undefined,
): Promise<z.infer<typeof RestoreResult>> {
  const number = versionNumberOf(rawVersion);
  const skill = await requireSkill(db, globalDbOf(env), actor, slug);
  const { version: old, guard } = await versionWithGuard(db, skill, slug, number);
  const content = restoredContent(old);
  const [current] = await installedQuery(db, actor, slug);
  // Content the current version holds already makes nothing current that is not: no guard to pass.
  const alreadyCurrent = current !== undefined && sameContent(current.version, content);
  if (!alreadyCurrent && guard?.status === 'evaluating') throw heldBack(slug, number, 'evaluating');
  const bar = alreadyCurrent || guard?.status === 'accepted' ? null : await barFor(db, env, actor, slug, content);
  if (!bar && !alreadyCurrent && guard?.status === 'refused') throw heldBack(slug, number, 'refused');
  const written = await guardedWrite(db, env, actor, slug, bar, grantToken, (hold) => writeVersion(db, actor, slug, content, true, 'skill.restored', hold));
  return {
    success: true as const,
    restoredFrom: old.versionNumber,
    skill: { slug, contentChecksum: written.contentChecksum },
    ...(written.guard ? { guard: written.guard } : {}),
  };
}

/** 409: a restore of a version the guard holds back would make it current without passing. */
const heldBack = (slug: string, number: number, status: 'evaluating' | 'refused') =>
  new AppError('CONFLICT', 409, `Version ${number} of "${slug}" is held back by the version guard (${status}); the owner may promote it`, {
    guard: status,
  });
