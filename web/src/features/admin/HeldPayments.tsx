/**
 * Payments held for an account's owner (paid signed out with the address of an account): each
 * with what the operator may do about it.
 */
export function HeldPayments() {
  return null;
}
