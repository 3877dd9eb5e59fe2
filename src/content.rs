//! Content the server reads from `config/` at start-up: the four legal texts, the shortcut list,
//! the chat funnels' scripts (`funnels.toml`) and the offline help library (`help-library/`).
//! A missing or malformed file stops start-up, naming the file.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::ProductSettings;

/// The legal dialogs: URL slug, file stem and title.
pub const LEGAL_DOCUMENTS: &[(&str, &str)] = &[
    ("privacy", "Privacy Policy"),
    ("terms", "Terms & Conditions"),
    ("refund", "Refund Policy"),
    ("contact", "Contact Us"),
];

#[derive(Debug, Clone, Serialize)]
pub struct LegalDocument {
    pub slug: &'static str,
    pub title: &'static str,
    /// Markdown, with the product name and support address filled in.
    pub body: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Shortcut {
    pub name: String,
    pub icon: String,
    pub url: String,
}

#[derive(Debug, Deserialize)]
struct ShortcutFile {
    shortcut: Vec<Shortcut>,
}

/// Everything loaded from the content folder.
#[derive(Debug, Clone)]
pub struct Content {
    pub legal: Vec<LegalDocument>,
    pub shortcuts: Vec<Shortcut>,
    pub funnel_scripts: Arc<helpnow_actors::rules::scripts::FunnelScripts>,
    pub help_library: Arc<crate::ai::library::HelpLibrary>,
}

#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid: {problem}")]
    Invalid { path: String, problem: String },
}

impl Content {
    pub fn load(dir: &Path, product: &ProductSettings) -> Result<Self, ContentError> {
        let legal = LEGAL_DOCUMENTS
            .iter()
            .map(|(slug, title)| {
                let path = dir.join("legal").join(format!("{slug}.md"));
                let text = read(&path)?;
                Ok(LegalDocument {
                    slug,
                    title,
                    body: text
                        .replace("{{product_name}}", &product.name)
                        .replace("{{support_email}}", &product.support_email),
                })
            })
            .collect::<Result<Vec<_>, ContentError>>()?;

        let path = dir.join("shortcuts.toml");
        let file: ShortcutFile =
            toml::from_str(&read(&path)?).map_err(|err| ContentError::Invalid {
                path: path.display().to_string(),
                problem: err.to_string(),
            })?;
        let shortcuts = file
            .shortcut
            .into_iter()
            .map(|shortcut| Shortcut {
                icon: format!("/icons/{}", shortcut.icon),
                ..shortcut
            })
            .collect();
        let path = dir.join("funnels.toml");
        let invalid = |problem: String| ContentError::Invalid {
            path: path.display().to_string(),
            problem,
        };
        let funnel_scripts: helpnow_actors::rules::scripts::FunnelScripts =
            toml::from_str(&read(&path)?).map_err(|err| invalid(err.to_string()))?;
        funnel_scripts
            .validate()
            .map_err(|err| invalid(err.to_string()))?;
        let help_library = crate::ai::library::HelpLibrary::load(&dir.join("help-library"))
            .map_err(|err| ContentError::Invalid {
                path: dir.join("help-library").display().to_string(),
                problem: err.to_string(),
            })?;
        Ok(Self {
            legal,
            shortcuts,
            funnel_scripts: Arc::new(funnel_scripts),
            help_library: Arc::new(help_library),
        })
    }

    pub fn legal(&self, slug: &str) -> Option<&LegalDocument> {
        self.legal.iter().find(|doc| doc.slug == slug)
    }
}

fn read(path: &Path) -> Result<String, ContentError> {
    std::fs::read_to_string(path).map_err(|source| ContentError::Read {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product() -> ProductSettings {
        ProductSettings {
            name: "FixIt".to_owned(),
            assistant_name: "Emma".to_owned(),
            support_email: "help@fixit.example".to_owned(),
        }
    }

    fn project_content() -> Content {
        Content::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("config"),
            &product(),
        )
        .expect("the project's content loads")
    }

    #[test]
    fn the_shortcut_list_has_the_spec_sites_in_order() {
        let names: Vec<_> = project_content()
            .shortcuts
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(
            names,
            [
                "Yahoo Mail",
                "YouTube",
                "Gmail",
                "AOL",
                "Facebook",
                "X",
                "Instagram",
                "Zoom",
                "TikTok",
                "WhatsApp",
                "LinkedIn",
                "Snapchat",
                "ProtonMail",
                "Pinterest",
                "Reddit",
                "WeChat",
                "Telegram",
                "Skype",
                "Slack",
                "Vimeo",
                "Tumblr",
                "Discord",
                "Signal",
                "Viber",
            ]
        );
    }

    #[test]
    fn shortcut_icons_point_at_our_own_artwork() {
        for shortcut in project_content().shortcuts {
            assert!(
                shortcut.icon.starts_with("/icons/") && shortcut.icon.ends_with(".svg"),
                "{shortcut:?}"
            );
            assert!(shortcut.url.starts_with("https://"), "{shortcut:?}");
        }
    }

    #[test]
    fn legal_texts_carry_the_product_name_and_the_spec_facts() {
        let content = project_content();
        for (slug, _) in LEGAL_DOCUMENTS {
            let doc = content.legal(slug).expect("every legal document is loaded");
            assert!(
                !doc.body.contains("{{"),
                "{slug} has an unfilled placeholder"
            );
            assert!(
                doc.body.contains("4 May 2025"),
                "{slug} says when it was last updated"
            );
        }
        let terms = &content.legal("terms").expect("terms").body;
        assert!(terms.contains("FixIt"));
        assert!(terms.contains("18"), "terms give the minimum age");
        let privacy = &content.legal("privacy").expect("privacy").body;
        assert!(privacy.contains("13"), "privacy gives its minimum age");
        let refund = &content.legal("refund").expect("refund").body;
        assert!(
            refund.contains("7 days") && refund.contains("24 hours"),
            "refund gives both readings"
        );
        assert!(refund.contains("5-7 business days") || refund.contains("5–7 business days"));
        let contact = &content.legal("contact").expect("contact").body;
        assert!(contact.contains("help@fixit.example"));
        assert!(contact.contains("24 business hours"));
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = Content::load(Path::new("/nonexistent-content"), &product())
            .expect_err("nothing there");
        assert!(
            err.to_string()
                .contains("/nonexistent-content/legal/privacy.md"),
            "{err}"
        );
    }

    #[test]
    fn the_help_library_answers_the_common_problems() {
        let library = project_content().help_library;
        assert!(library.len() >= 25, "{} guides", library.len());
        let found = |question: &str| {
            library
                .best_match(question)
                .map(|article| article.slug.clone())
                .unwrap_or_default()
        };
        for (question, slug) in [
            ("I forgot my gmail password", "gmail-sign-in-password"),
            ("can't log into my hotmail", "outlook-hotmail-sign-in"),
            ("yahoo mail says wrong password", "yahoo-mail-sign-in"),
            ("my printer says offline", "printer-offline-not-printing"),
            (
                "the wifi won't connect on my laptop",
                "wifi-not-connecting-computer",
            ),
            ("my computer is so slow", "slow-computer-windows"),
            (
                "a pop up says my computer is infected and to call microsoft",
                "tech-support-scam",
            ),
            (
                "zoom camera not working",
                "zoom-camera-microphone-not-working",
            ),
            ("my phone storage is full", "phone-storage-full"),
            (
                "I got a text saying my package is held, is it a scam",
                "phishing-emails-and-texts",
            ),
            (
                "is this email from my bank real",
                "phishing-emails-and-texts",
            ),
            (
                "my outlook keeps asking for my password",
                "outlook-hotmail-sign-in",
            ),
            ("windows update stuck at 30%", "windows-update-stuck"),
            ("how do I back up my iphone photos", "backup-phone"),
        ] {
            assert_eq!(found(question), slug, "{question}");
        }
    }
}
