import { gzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { readArchive } from '../../workers/lib/archive';
import { BUNDLE_LIMITS, BundleError, bundleManifest, parseSkillMd, validateBundle } from '../../workers/lib/bundle';
import { skillMd } from '../helpers/skills';

const file = (path: string, text: string) => ({ path, bytes: new TextEncoder().encode(text) });
const ruleOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    if (error instanceof BundleError) return error.rule;
    throw error;
  }
  return 'accepted';
};

describe('content checksum', () => {
  it('is the same for the same files in any order, and changes with any byte or path', async () => {
    const a = [file('SKILL.md', skillMd('x')), file('references/r.md', 'r')];
    const same = await bundleManifest([...a].reverse());
    expect((await bundleManifest(a)).checksum).toBe(same.checksum);
    expect((await bundleManifest([a[0]!, file('references/r.md', 'R')])).checksum).not.toBe(same.checksum);
    expect((await bundleManifest([a[0]!, file('references/s.md', 'r')])).checksum).not.toBe(same.checksum);
  });
});

describe('SKILL.md frontmatter', () => {
  it('reads the fields of the Agent Skills format', () => {
    const bundle = validateBundle([file('SKILL.md', skillMd('my-skill', { title: 'My Skill', category: 'design' }))], 'my-skill');
    expect(bundle).toMatchObject({ slug: 'my-skill', name: 'My Skill', category: 'design', author: 'Test Author', version: '1.0.0', license: 'MIT' });
  });

  it('parses data only: aliases are refused and unknown tags stay inert strings', () => {
    expect(ruleOf(() => parseSkillMd('---\nname: &a x\ndescription: *a\n---\nbody'))).toBe('frontmatter');
    const parsed = parseSkillMd('---\nname: tagged\ndescription: !!js/function "return process"\n---\nbody');
    expect(parsed.frontmatter.description).toBe('return process');
  });

  it.each([
    ['no frontmatter', 'just text', 'frontmatter'],
    ['bad name', '---\nname: Bad Name\ndescription: d\n---\nbody', 'frontmatter'],
    ['unknown category', '---\nname: x\ndescription: d\nmetadata:\n  category: cooking\n---\nbody', 'frontmatter'],
    ['empty prompt', '---\nname: x\ndescription: d\n---\n  \n', 'empty_prompt'],
  ])('refuses %s', (_label, text, rule) => {
    expect(ruleOf(() => validateBundle([file('SKILL.md', text)]))).toBe(rule);
  });
});

describe('bundle paths and sizes', () => {
  it.each(['../escape.md', '/etc/passwd', '.hidden', 'scripts/.env', 'a\\b.md', 'dir//x.md', 'x/../../y'])('refuses the path %s', (path) => {
    expect(ruleOf(() => validateBundle([file('SKILL.md', skillMd('x')), file(path, 'x')]))).toBe('unsafe_path');
  });

  it('refuses missing SKILL.md, oversized files and too many files', () => {
    expect(ruleOf(() => validateBundle([file('README.md', 'x')]))).toBe('missing_skill_md');
    const big = { path: 'assets/big.bin', bytes: new Uint8Array(BUNDLE_LIMITS.fileBytes + 1) };
    expect(ruleOf(() => validateBundle([file('SKILL.md', skillMd('x')), big]))).toBe('file_too_large');
    const many = Array.from({ length: BUNDLE_LIMITS.files }, (_, i) => file(`assets/${i}.md`, 'x'));
    expect(ruleOf(() => validateBundle([file('SKILL.md', skillMd('x')), ...many]))).toBe('too_many_files');
  });
});

describe('readArchive', () => {
  it('reads zip and tar.gz archives, dropping the one top folder', () => {
    const zip = zipSync({ 'repo-main/SKILL.md': new TextEncoder().encode(skillMd('z')) });
    expect(readArchive(zip).map((f) => f.path)).toEqual(['SKILL.md']);
  });

  it('refuses a zip entry whose Unix mode is a symlink', () => {
    const zip = zipSync({
      'SKILL.md': new TextEncoder().encode(skillMd('z')),
      'link.md': [new TextEncoder().encode('/etc/passwd'), { os: 3, attrs: (0o120777 << 16) >>> 0 }],
    });
    expect(ruleOf(() => readArchive(zip))).toBe('symlink');
  });

  it('refuses a gzip that claims to expand beyond the cap, before inflating it', () => {
    const gz = gzipSync(new Uint8Array(1024));
    new DataView(gz.buffer).setUint32(gz.length - 4, 0xfffffff0, true);
    expect(ruleOf(() => readArchive(gz))).toBe('archive_too_large');
  });
});
