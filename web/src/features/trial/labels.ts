/** The spec words the trial button differently for members and for visitors. */
export function trialButtonLabel(signedIn: boolean): string {
  return signedIn ? 'Start Your 7-Day Trial for $1' : 'Start Your Trial for $1';
}
