import { ApiError } from '../../lib/api';

// The spec's texts for the Access Your Subscription dialog (sections 5 and 8).
export const NO_SESSION = 'No session information found. Please contact support.';
export const EMAIL_MISSING = 'Your account was created but email information is missing. Please contact support.';
export const LOOKUP_FAILED = 'Error checking for your account. Please try again or contact support.';
export const BOTH_REQUIRED = 'Please enter both email and password';
export const EMAIL_FOR_ACCOUNT = 'Please enter your email address to create an account';
export const EMAIL_FOR_RESET = 'Please enter your email address first';
export const LOGIN_FAILED = 'Login failed. Please check your email and password.';
export const EMAIL_IN_USE = 'An account with this email already exists. Please sign in instead.';
export const RESET_FAILED = 'Error sending password reset email. Please try again.';
export const LOGIN_SUCCESS = 'Login successful! Redirecting to your account...';
export const ACCOUNT_CREATED =
  "Account created successfully! We've sent a confirmation email. Redirecting to your account...";

/**
 * The spec tells an unknown email ('No account found...') from a wrong password ('Incorrect
 * password...'). Our sign-in answers both with one 401 `invalid_credentials`, so that nobody can
 * learn which emails have accounts (docs/operations.md, "Which forms tell whether an address has
 * an account"; docs/spec.md); that answer gets the spec's default text.
 */
export function signInFailure(cause: unknown): string {
  // 'Too many failed login attempts...' says what to do, which the default text would not.
  if (cause instanceof ApiError && cause.code === 'too_many_requests') return cause.message;
  return LOGIN_FAILED;
}

export function createFailure(cause: unknown): string {
  if (cause instanceof ApiError && cause.code === 'email_in_use') return EMAIL_IN_USE;
  const message = cause instanceof Error ? cause.message : String(cause);
  return `Error creating account: ${message}`;
}
