// The debug page's texts: the spec's where it has them (sections 5 and 8), ours otherwise.
export const NOT_AVAILABLE = 'This page is not available.';
export const LOGIN_BOTH_REQUIRED = 'Please enter both email and password';
export const LOGIN_FAILED = 'Login failed';
export const CREATE_EMAIL_REQUIRED = 'Email is required to create an account';
export const CREATE_FAILED = 'Account creation failed';
export const RESET_EMAIL_REQUIRED = 'Please enter your email address';
export const RESET_FAILED = 'Password reset failed';
export const SIMULATE_SESSION_REQUIRED = 'Pick a checkout from the table or enter a paymentSessionId';
export const SIMULATE_EMAIL_REQUIRED = 'Email is required to simulate a webhook';
export const SIMULATE_FAILED = 'Error simulating webhook';
export const LOAD_FAILED = 'Could not load the debug data';

/**
 * 'Login failed: {server message}'. Some server messages already start with the words
 * ('Account creation failed: ... already has an account'), and are not doubled.
 */
export function failureText(prefix: string, cause: unknown): string {
  const message = (cause instanceof Error ? cause.message : String(cause ?? '')).trim();
  if (message === '') return prefix;
  if (message.toLowerCase().startsWith(prefix.toLowerCase())) return message;
  return `${prefix}: ${message}`;
}
