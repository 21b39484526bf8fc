/**
 * A profile command's user error: the message goes to stderr as-is and the command exits with the
 * group's own code (2: missing file or unresolvable argument, 1: unparseable trace, 3: no profile).
 */
export class ProfileError extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message);
    this.name = 'ProfileError';
  }
}
