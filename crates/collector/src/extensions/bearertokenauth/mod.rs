//! `extensions: bearertokenauth:` checks the token on the receivers that
//! name it (`auth: {authenticator: bearertokenauth/NAME}`) and adds it to
//! the requests of the exporters that do, as contrib's
//! bearertokenauthextension: `HEADER: SCHEME TOKEN`, by default
//! `Authorization: Bearer TOKEN`.

mod config;

pub use config::BearerTokenAuthConfig;

use crate::component::{
    ExtensionContext, ExtensionFactory, ExtensionStartFuture, Offers, StartError, StartedExtension,
};
use crate::tls::{AuthError, BearerAuth, TokenSource};

pub struct BearerTokenAuthExtensionFactory;

impl ExtensionFactory for BearerTokenAuthExtensionFactory {
    const KIND: &'static str = "bearertokenauth";
    type Options = BearerTokenAuthConfig;

    fn start<'a>(
        &'a self,
        options: &'a BearerTokenAuthConfig,
        context: ExtensionContext<'a>,
    ) -> ExtensionStartFuture<'a> {
        Box::pin(async move {
            let auth =
                authenticator(options).map_err(|error| StartError::extension(context.id, error))?;
            Ok(StartedExtension {
                offers: Offers {
                    authenticator: Some(auth),
                    ..Offers::default()
                },
                ..StartedExtension::default()
            })
        })
    }

    fn check(&self, id: &str, options: &BearerTokenAuthConfig) -> Vec<StartError> {
        authenticator(options)
            .err()
            .map(|error| StartError::extension(id, error))
            .into_iter()
            .collect()
    }
}

fn authenticator(options: &BearerTokenAuthConfig) -> Result<BearerAuth, AuthError> {
    let source = match (&options.filename, &options.token) {
        (Some(path), _) => TokenSource::File(path.clone()),
        (None, Some(token)) => TokenSource::Fixed(vec![token.clone()]),
        (None, None) => TokenSource::Fixed(options.tokens.clone()),
    };
    BearerAuth::with_scheme(source, &options.scheme, &options.header)
}
