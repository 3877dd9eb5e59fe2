//! Limits on guessing: sign-in attempts and reset mails, per account and per client address, and
//! sign-ups and checkouts per address. Counted by the deployment's [`Cluster`]: once for every
//! process when they share an event engine, else in this process (governor's keyed limiters).
//!
//! An account's hard limits count per account and address pair, so a stranger's tries lock only
//! the stranger's own address out; each account also has a ceiling across all addresses, far
//! higher, which bounds a guesser spread over many addresses. Why these numbers, and why the
//! ceiling cannot keep the owner out: docs/operations.md, "Limits on guessing".

use std::net::IpAddr;
use std::time::Duration;

use crate::cluster::{Cluster, Limit};
use crate::domain::Email;

/// Ten tries at one account from one address, then one a minute: a person who forgot a password
/// is not hindered; a guesser gets 1,440 tries a day from each address.
const LOGIN_PER_ACCOUNT_ADDRESS: Limit = Limit {
    name: "login-account-address",
    burst: 10,
    period: Duration::from_secs(60),
};
/// Every address together, at one account: ten times one address's rate, so a stranger must keep
/// ten addresses guessing to crowd the owner out (and the owner then gets in by mail).
const LOGIN_PER_ACCOUNT: Limit = Limit {
    name: "login-account",
    burst: 100,
    period: Duration::from_secs(6),
};
/// One address may sign in to many accounts (a household, an office), but not spray.
const LOGIN_PER_ADDRESS: Limit = Limit {
    name: "login-address",
    burst: 30,
    period: Duration::from_secs(10),
};
/// Reset mails to one account asked from one address.
const RESET_PER_ACCOUNT_ADDRESS: Limit = Limit {
    name: "reset-account-address",
    burst: 3,
    period: Duration::from_secs(10 * 60),
};
/// Reset mails to one account from every address: bounds mail bombing. When it refuses, a mail
/// went to the account within the last `period` (GCRA refuses only that soon after an allowed
/// attempt), and its link works for an hour: whoever reads the mailbox can always reset.
const RESET_PER_ACCOUNT: Limit = Limit {
    name: "reset-account",
    burst: 10,
    period: Duration::from_secs(6 * 60),
};
const RESET_PER_ADDRESS: Limit = Limit {
    name: "reset-address",
    burst: 10,
    period: Duration::from_secs(60),
};
/// Setting a new password from a reset link: each try costs a hash.
const RESET_CONFIRM_PER_ADDRESS: Limit = Limit {
    name: "reset-confirm-address",
    burst: 10,
    period: Duration::from_secs(60),
};
const SIGNUP_PER_ADDRESS: Limit = Limit {
    name: "signup-address",
    burst: 10,
    period: Duration::from_secs(60),
};
/// The success page: each hit on a checkout not yet fulfilled may ask the payment provider.
const CHECKOUT_SUCCESS_PER_ADDRESS: Limit = Limit {
    name: "checkout-success-address",
    burst: 30,
    period: Duration::from_secs(2),
};
const CHECKOUT_SUCCESS_PER_CHECKOUT: Limit = Limit {
    name: "checkout-success-checkout",
    burst: 20,
    period: Duration::from_secs(3),
};
/// Each checkout is a call to the payment provider.
const CHECKOUT_PER_ADDRESS: Limit = Limit {
    name: "checkout-address",
    burst: 20,
    period: Duration::from_secs(6),
};

/// The key of an account and address pair. An unknown address (no peer) is one address of its
/// own, as every such request may be the same client.
fn pair(email: &Email, address: Option<IpAddr>) -> String {
    match address {
        Some(address) => format!("{} {address}", email.as_str()),
        None => format!("{} unknown", email.as_str()),
    }
}

pub struct AuthThrottle {
    cluster: Cluster,
}

impl AuthThrottle {
    pub fn new(cluster: Cluster) -> Self {
        Self { cluster }
    }

    /// Counts one sign-in attempt; false when the address, the account from this address, or the
    /// account as a whole is over its limit. Each is counted only when the one before allowed the
    /// attempt, so a refused stranger does not use up the account's ceiling.
    pub async fn allow_login(&self, email: &Email, address: Option<IpAddr>) -> bool {
        self.cluster.allow_address(LOGIN_PER_ADDRESS, address).await
            && self
                .cluster
                .allow(LOGIN_PER_ACCOUNT_ADDRESS, &pair(email, address))
                .await
            && self.cluster.allow(LOGIN_PER_ACCOUNT, email.as_str()).await
    }

    /// Counts one reset mail asked for `email`, in the same three steps as [`Self::allow_login`].
    pub async fn allow_reset(&self, email: &Email, address: Option<IpAddr>) -> bool {
        self.cluster.allow_address(RESET_PER_ADDRESS, address).await
            && self
                .cluster
                .allow(RESET_PER_ACCOUNT_ADDRESS, &pair(email, address))
                .await
            && self.cluster.allow(RESET_PER_ACCOUNT, email.as_str()).await
    }

    pub async fn allow_reset_confirm(&self, address: Option<IpAddr>) -> bool {
        self.cluster
            .allow_address(RESET_CONFIRM_PER_ADDRESS, address)
            .await
    }

    pub async fn allow_signup(&self, address: Option<IpAddr>) -> bool {
        self.cluster
            .allow_address(SIGNUP_PER_ADDRESS, address)
            .await
    }

    /// One hit of the success page for `checkout` (its provider or tracking id).
    pub async fn allow_checkout_success(&self, checkout: &str, address: Option<IpAddr>) -> bool {
        self.cluster
            .allow_address(CHECKOUT_SUCCESS_PER_ADDRESS, address)
            .await
            && self
                .cluster
                .allow(CHECKOUT_SUCCESS_PER_CHECKOUT, checkout)
                .await
    }

    pub async fn allow_checkout(&self, address: Option<IpAddr>) -> bool {
        self.cluster
            .allow_address(CHECKOUT_PER_ADDRESS, address)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(n: u32) -> Option<IpAddr> {
        Some(IpAddr::from(n.to_be_bytes()))
    }

    #[tokio::test]
    async fn a_stranger_locks_only_their_own_address_out_of_an_account() {
        let throttle = AuthThrottle::new(Cluster::alone());
        let email = Email::parse("ann@example.com").expect("email");
        let stranger = Some(IpAddr::from([203, 0, 113, 1]));
        for attempt in 0..10 {
            assert!(
                throttle.allow_login(&email, stranger).await,
                "attempt {attempt}"
            );
        }
        assert!(!throttle.allow_login(&email, stranger).await);
        assert!(
            throttle
                .allow_login(&email, Some(IpAddr::from([198, 51, 100, 7])))
                .await,
            "the owner, from another address"
        );
    }

    #[tokio::test]
    async fn an_account_meets_its_ceiling_across_addresses() {
        let throttle = AuthThrottle::new(Cluster::alone());
        let email = Email::parse("ann@example.com").expect("email");
        for n in 0..100 {
            // Ten tries from each of ten addresses.
            assert!(
                throttle.allow_login(&email, address(n / 10)).await,
                "try {n}"
            );
        }
        assert!(!throttle.allow_login(&email, address(99)).await);
        let other = Email::parse("bob@example.com").expect("email");
        assert!(throttle.allow_login(&other, address(99)).await);
    }

    #[tokio::test]
    async fn an_address_is_limited_across_accounts() {
        let throttle = AuthThrottle::new(Cluster::alone());
        let address = Some(IpAddr::from([192, 0, 2, 1]));
        for n in 0..30 {
            let email = Email::parse(&format!("user{n}@example.com")).expect("email");
            assert!(throttle.allow_login(&email, address).await, "account {n}");
        }
        let email = Email::parse("late@example.com").expect("email");
        assert!(!throttle.allow_login(&email, address).await);
    }

    #[tokio::test]
    async fn reset_mails_are_limited_per_account_and_address_and_per_account() {
        let throttle = AuthThrottle::new(Cluster::alone());
        let email = Email::parse("ann@example.com").expect("email");
        for _ in 0..3 {
            assert!(throttle.allow_reset(&email, address(1)).await);
        }
        assert!(!throttle.allow_reset(&email, address(1)).await);
        // Seven more from other addresses reach the account's ten.
        for n in 2..9 {
            assert!(throttle.allow_reset(&email, address(n)).await, "{n}");
        }
        assert!(!throttle.allow_reset(&email, address(9)).await);
    }
}
