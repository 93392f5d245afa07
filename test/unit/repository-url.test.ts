import { describe, expect, it } from 'vitest';
import { publicRepositoryUrl } from '../../scripts/repository-url';

describe('the catalog importer’s repository URL', () => {
  it('turns every usual remote form into the public https URL', () => {
    for (const remote of [
      'https://github.com/acme/skills',
      'https://github.com/acme/skills.git',
      'https://x-access-token:ghp_secret@github.com/acme/skills.git',
      'git@github.com:acme/skills.git',
      'ssh://git@github.com/acme/skills.git',
      'git://github.com/acme/skills',
      ' https://github.com/acme/skills/ ',
    ]) {
      expect(publicRepositoryUrl(remote), remote).toBe('https://github.com/acme/skills');
    }
    expect(publicRepositoryUrl('https://git.example.test:8443/team/skills')).toBe('https://git.example.test:8443/team/skills');
  });

  it('answers null for anything that is not a public repository: never a local path', () => {
    for (const remote of [
      '/home/dev/skills',
      '../skills',
      'catalog',
      'file:///srv/git/skills.git',
      'C:\\skills',
      'https://localhost/acme/skills',
      'https://github.com/acme',
      '',
    ]) {
      expect(publicRepositoryUrl(remote), remote).toBeNull();
    }
  });
});
