/**
 * The public web address of a git remote, for the catalog's `repository`: `git@host:owner/repo.git`
 * and `ssh://git@host/owner/repo` become `https://host/owner/repo`; credentials, query and a
 * trailing `.git` are dropped. A local path, a `file:` remote or anything else is not public: null.
 */
export function publicRepositoryUrl(remote: string): string | null {
  const text = remote.trim();
  const scp = /^[\w.-]+@([\w.-]+\.[a-z]{2,}):(?!\/)(.+)$/i.exec(text);
  let url: URL;
  try {
    url = new URL(scp ? `https://${scp[1]}/${scp[2]}` : text);
  } catch {
    return null;
  }
  if (!['https:', 'http:', 'ssh:', 'git:'].includes(url.protocol) || !url.hostname.includes('.')) return null;
  const path = url.pathname.replace(/\/+$/, '').replace(/\.git$/, '');
  if (path.split('/').filter(Boolean).length < 2) return null;
  return `https://${url.hostname}${url.port && url.protocol.startsWith('http') ? `:${url.port}` : ''}${path}`;
}
