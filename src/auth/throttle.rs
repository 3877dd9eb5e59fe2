//! Limits on guessing: sign-in attempts and reset mails, per account and per client address, and
//! sign-ups and checkouts per address. Counted by the deployment's [`Cluster`]: once for every
//! process when they share an event engine, else in this process (governor's keyed limiters).

use std::net::IpAddr;
use std::time::Duration;

use crate::cluster::{Cluster, Limit};
use crate::domain::Email;

/// Ten tries at one account, then one a minute: a person who forgot a password is not hindered;
/// a guesser gets 1,440 tries a day.
const LOGIN_PER_ACCOUNT: Limit = Limit {
    name: "login-account",
    burst: 10,
    period: Duration::from_secs(60),
};
/// One address may sign in to many accounts (a household, an office), but not spray.
const LOGIN_PER_ADDRESS: Limit = Limit {
    name: "login-address",
    burst: 30,
    period: Duration::from_secs(10),
};
const RESET_PER_ACCOUNT: Limit = Limit {
    name: "reset-account",
    burst: 3,
    period: Duration::from_secs(10 * 60),
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

pub struct AuthThrottle {
    cluster: Cluster,
}

impl AuthThrottle {
    pub fn new(cluster: Cluster) -> Self {
        Self { cluster }
    }

    /// Counts one sign-in attempt; false when the account or the address is over its limit.
    pub async fn allow_login(&self, email: &Email, address: Option<IpAddr>) -> bool {
        self.cluster.allow_address(LOGIN_PER_ADDRESS, address).await
            && self.cluster.allow(LOGIN_PER_ACCOUNT, email.as_str()).await
    }

    pub async fn allow_reset(&self, email: &Email, address: Option<IpAddr>) -> bool {
        self.cluster.allow_address(RESET_PER_ADDRESS, address).await
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

    #[tokio::test]
    async fn an_account_is_locked_after_ten_tries_whatever_the_address() {
        let throttle = AuthThrottle::new(Cluster::alone());
        let email = Email::parse("ann@example.com").expect("email");
        for attempt in 0..10u8 {
            let address = Some(IpAddr::from([10, 0, 0, attempt]));
            assert!(
                throttle.allow_login(&email, address).await,
                "attempt {attempt}"
            );
        }
        assert!(
            !throttle
                .allow_login(&email, Some(IpAddr::from([10, 0, 1, 1])))
                .await
        );
        let other = Email::parse("bob@example.com").expect("email");
        assert!(
            throttle
                .allow_login(&other, Some(IpAddr::from([10, 0, 1, 1])))
                .await
        );
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
    async fn reset_mails_are_limited_per_account() {
        let throttle = AuthThrottle::new(Cluster::alone());
        let email = Email::parse("ann@example.com").expect("email");
        for n in 0..3u8 {
            assert!(
                throttle
                    .allow_reset(&email, Some(IpAddr::from([10, 0, 0, n])))
                    .await
            );
        }
        assert!(
            !throttle
                .allow_reset(&email, Some(IpAddr::from([10, 0, 0, 9])))
                .await
        );
    }
}
