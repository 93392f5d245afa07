import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BundleError, type BundleFile } from '../../workers/lib/bundle';

/** Every file under `dir`, refusing symlinks and anything that is not a plain file or folder. */
export function readBundleFiles(dir: string): BundleFile[] {
  const files: BundleFile[] = [];
  const walk = (current: string) => {
    for (const name of readdirSync(current)) {
      const full = join(current, name);
      const stat = lstatSync(full);
      const path = relative(dir, full).split('\\').join('/');
      if (stat.isSymbolicLink()) throw new BundleError('symlink', `Symlinks are not allowed: ${path}`);
      if (stat.isDirectory()) walk(full);
      else if (stat.isFile()) files.push({ path, bytes: new Uint8Array(readFileSync(full)) });
      else throw new BundleError('unsafe_path', `Not a regular file: ${path}`);
    }
  };
  walk(dir);
  return files;
}

/** The bundles under `root`: itself when it holds SKILL.md, else its visible sub-folders, sorted. */
export function bundleFolders(root: string): string[] {
  if (lstatSync(join(root, 'SKILL.md'), { throwIfNoEntry: false })) return [root];
  return readdirSync(root)
    .map((name) => join(root, name))
    .filter((p) => lstatSync(p).isDirectory() && !p.split('/').pop()!.startsWith('.'))
    .sort();
}
