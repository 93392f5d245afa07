import { invalidInput } from '../errors';
import { BUNDLE_LIMITS, type BundleFile, renderSkillMd } from './bundle';
import { EVALS_PATH, renderEvalsFile, type EvalCase } from './eval-cases';

/** What a write of the user's own content gives (PUT /skills/:slug): the fields of SKILL.md and, optionally, the eval cases. */
export interface AuthoredFields {
  name: string;
  description: string;
  category: string;
  prompt: string;
  /** Omitted: the current cases stay; null: the version has none. */
  evals?: EvalCase[] | null;
}

/**
 * The files of a new version written from `fields` over the current version's `current` files:
 * SKILL.md is rendered from the fields, `evals/evals.json` from `evals` when given, and every
 * other file (references, scripts, assets, the eval input files) is kept, so editing the
 * instructions loses none of what they may point to. `evals: null` drops everything under
 * `evals/`. A file written here that breaks its size limit is refused at the field it comes from;
 * the bundle's own limits are checked on the result by the caller.
 */
export function authoredFiles(slug: string, author: string, fields: AuthoredFields, current: BundleFile[]): BundleFile[] {
  const encode = (text: string) => new TextEncoder().encode(text);
  const skillMd = encode(renderSkillMd({ slug, ...fields, author }));
  if (skillMd.length > BUNDLE_LIMITS.skillMdBytes) {
    throw invalidInput('prompt', 'file_too_large', `SKILL.md written from these fields exceeds ${BUNDLE_LIMITS.skillMdBytes} bytes`);
  }
  const evals = fields.evals ? encode(renderEvalsFile(slug, fields.evals)) : null;
  if (evals && evals.length > BUNDLE_LIMITS.fileBytes) {
    throw invalidInput('evals', 'file_too_large', `${EVALS_PATH} written from these cases exceeds ${BUNDLE_LIMITS.fileBytes} bytes`);
  }
  const replaced = (path: string) => path === 'SKILL.md' || (fields.evals === null && path.startsWith('evals/')) || (evals !== null && path === EVALS_PATH);
  return [{ path: 'SKILL.md', bytes: skillMd }, ...current.filter((f) => !replaced(f.path)), ...(evals ? [{ path: EVALS_PATH, bytes: evals }] : [])];
}
