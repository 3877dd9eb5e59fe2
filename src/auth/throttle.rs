//! Limits on guessing: sign-in attempts and reset mails, per account and per client address,
//! with governor's keyed limiters (in memory, per process).

use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::domain::Email;

/// Past this many tracked keys, keys whose quota has refilled are forgotten.
const CLEANUP_THRESHOLD: usize = 10_000;

/// `burst` attempts at once, then one more every `period`.
fn limiter<K: Hash + Eq + Clone>(burst: u32, period: Duration) -> DefaultKeyedRateLimiter<K> {
    let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
    let quota = Quota::with_period(period)
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(burst);
    RateLimiter::keyed(quota)
}

fn allow<K: Hash + Eq + Clone>(limiter: &DefaultKeyedRateLimiter<K>, key: &K) -> bool {
    if limiter.len() > CLEANUP_THRESHOLD {
        limiter.retain_recent();
    }
    limiter.check_key(key).is_ok()
}

pub struct AuthThrottle {
    login_per_account: DefaultKeyedRateLimiter<String>,
    login_per_address: DefaultKeyedRateLimiter<IpAddr>,
    reset_per_account: DefaultKeyedRateLimiter<String>,
    reset_per_address: DefaultKeyedRateLimiter<IpAddr>,
    signup_per_address: DefaultKeyedRateLimiter<IpAddr>,
    checkout_per_address: DefaultKeyedRateLimiter<IpAddr>,
}

impl AuthThrottle {
    pub fn new() -> Self {
        Self {
            // Ten tries at one account, then one a minute: a person who forgot a password is
            // not hindered; a guesser gets 1,440 tries a day.
            login_per_account: limiter(10, Duration::from_secs(60)),
            // One address may sign in to many accounts (a household, an office), but not spray.
            login_per_address: limiter(30, Duration::from_secs(10)),
            reset_per_account: limiter(3, Duration::from_secs(10 * 60)),
            reset_per_address: limiter(10, Duration::from_secs(60)),
            signup_per_address: limiter(10, Duration::from_secs(60)),
            // Each checkout is a call to the payment provider.
            checkout_per_address: limiter(20, Duration::from_secs(6)),
        }
    }

    /// Counts one sign-in attempt; false when the account or the address is over its limit.
    pub fn allow_login(&self, email: &Email, address: Option<IpAddr>) -> bool {
        let by_address = address.is_none_or(|ip| allow(&self.login_per_address, &ip));
        by_address && allow(&self.login_per_account, &email.as_str().to_owned())
    }

    pub fn allow_reset(&self, email: &Email, address: Option<IpAddr>) -> bool {
        let by_address = address.is_none_or(|ip| allow(&self.reset_per_address, &ip));
        by_address && allow(&self.reset_per_account, &email.as_str().to_owned())
    }

    pub fn allow_signup(&self, address: Option<IpAddr>) -> bool {
        address.is_none_or(|ip| allow(&self.signup_per_address, &ip))
    }

    pub fn allow_checkout(&self, address: Option<IpAddr>) -> bool {
        address.is_none_or(|ip| allow(&self.checkout_per_address, &ip))
    }
}

impl Default for AuthThrottle {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_is_locked_after_ten_tries_whatever_the_address() {
        let throttle = AuthThrottle::new();
        let email = Email::parse("ann@example.com").expect("email");
        for attempt in 0..10u8 {
            let address = Some(IpAddr::from([10, 0, 0, attempt]));
            assert!(throttle.allow_login(&email, address), "attempt {attempt}");
        }
        assert!(!throttle.allow_login(&email, Some(IpAddr::from([10, 0, 1, 1]))));
        let other = Email::parse("bob@example.com").expect("email");
        assert!(throttle.allow_login(&other, Some(IpAddr::from([10, 0, 1, 1]))));
    }

    #[test]
    fn an_address_is_limited_across_accounts() {
        let throttle = AuthThrottle::new();
        let address = Some(IpAddr::from([192, 0, 2, 1]));
        for n in 0..30 {
            let email = Email::parse(&format!("user{n}@example.com")).expect("email");
            assert!(throttle.allow_login(&email, address), "account {n}");
        }
        let email = Email::parse("late@example.com").expect("email");
        assert!(!throttle.allow_login(&email, address));
    }

    #[test]
    fn reset_mails_are_limited_per_account() {
        let throttle = AuthThrottle::new();
        let email = Email::parse("ann@example.com").expect("email");
        for n in 0..3u8 {
            assert!(throttle.allow_reset(&email, Some(IpAddr::from([10, 0, 0, n]))));
        }
        assert!(!throttle.allow_reset(&email, Some(IpAddr::from([10, 0, 0, 9]))));
    }
}
