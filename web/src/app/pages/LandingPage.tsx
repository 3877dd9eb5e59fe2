import { useState } from 'react';
import { usePublicConfig } from '../../lib/public-config';
import { ShortcutPicker } from '../../features/shortcuts/ShortcutPicker';
import { SignupModal } from '../../features/auth/SignupModal';
import { useStartTrial } from '../../features/trial/useStartTrial';

export function LandingPage() {
  const { assistantName } = usePublicConfig();
  const [signupOpen, setSignupOpen] = useState(false);
  // The blurb's promise: signing up here leads to the free 7-day trial (nothing today).
  const freeTrial = useStartTrial('direct_signup');

  const steps = [
    {
      title: 'Select Your Shortcuts',
      text: 'Pick the sites you use most. You can change your choice at any time.',
    },
    {
      title: 'Create Your Account',
      text: 'Sign up with your email address and a password. It takes less than a minute.',
    },
    {
      title: 'Get Unlimited Chat Help',
      text: `Ask ${assistantName}, your personal chat assistant, about email, passwords, video calls or anything else on your computer - day or night.`,
    },
  ];

  return (
    <div className="landing">
      <section className="hero" aria-labelledby="hero-title">
        <h1 id="hero-title" className="hero__title">
          Easily Access Your Favorite Sites. <span className="hero__accent">Select Your Shortcuts...</span>
        </h1>
        <p className="hero__subtitle">
          ...and open them with one click. Choose the websites you use every day, and get friendly expert help
          whenever something doesn't work.
        </p>
      </section>

      <section className="card picker-section" aria-labelledby="picker-title">
        <h2 id="picker-title" className="section-title">
          Choose your favorite sites
        </h2>
        <p className="section-lead">Click a site to select it. Click it again to remove it.</p>
        <ShortcutPicker onSaveFavorites={() => setSignupOpen(true)} />
      </section>

      <section className="how-it-works" aria-labelledby="how-title">
        <h2 id="how-title" className="section-title">
          How It Works
        </h2>
        <ol className="steps">
          {steps.map((step, index) => (
            <li key={step.title} className="step">
              <span className="step__number" aria-hidden="true">
                {index + 1}
              </span>
              <h3 className="step__title">{step.title}</h3>
              <p className="step__text">{step.text}</p>
            </li>
          ))}
        </ol>
      </section>

      <section className="pricing" aria-label="Pricing">
        <p className="pricing__blurb">Free 7-Day Trial, Then Only $20/month. No commitments.</p>
      </section>

      {signupOpen && (
        <SignupModal
          onClose={() => setSignupOpen(false)}
          onSignedUp={() => void freeTrial.start()}
          nextStep={
            <>
              {freeTrial.busy && (
                <p className="signup-dialog__status" role="status">
                  Taking you to the secure checkout...
                </p>
              )}
              {freeTrial.error && (
                <p className="form__error" role="alert">
                  {freeTrial.error}
                </p>
              )}
            </>
          }
        />
      )}
    </div>
  );
}
