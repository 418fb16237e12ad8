//! Expansion snapshots: what the derive writes, for a reviewer to read.
//! Update with `INSTA_UPDATE=always cargo test -p ttl-derive`, then review
//! the files in `src/snapshots/`.

use quote::quote;

use crate::expand::derive;

fn pretty(tokens: proc_macro2::TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("expansion parses as items");
    prettyplease::unparse(&file)
}

#[test]
fn default_strategy() {
    let out = derive(quote! {
        #[bigtable(table = "clicks", family = "c", key_separator = "#")]
        #[ttl(default = "2d", written_at)]
        struct Click {
            #[bigtable(key)]
            customer: String,
            #[bigtable(key)]
            seq: u64,
            url: String,
            #[bigtable(column = "ref")]
            referrer: Option<String>,
            #[bigtable(family = "m")]
            #[ttl(for = "1h")]
            hot: Option<bool>,
            #[ttl(expire_at)]
            expires: Option<DateTime<Utc>>,
        }
    });
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn one_second_strategy() {
    let out = derive(quote! {
        #[bigtable(table = "sessions", family = "s")]
        struct Session {
            #[bigtable(key)]
            id: String,
            #[ttl(expire_at)]
            expires_at: DateTime<Utc>,
            user: String,
        }
    });
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn errors_come_with_a_stub_impl() {
    let out = derive(quote! {
        #[bigtable(table = "clicks", famly = "c")]
        #[ttl(default = "2x")]
        struct Click {
            #[bigtable(key)]
            id: String,
            url: String,
        }
    });
    let text = out.to_string();
    assert_eq!(text.matches("compile_error").count(), 2, "{text}");
    assert!(text.contains("BigtableRow for Click"), "{text}");
    assert!(text.contains("unreachable"), "{text}");
}

#[test]
#[should_panic(expected = "without check")]
fn unchecked_context_panics() {
    let cx = crate::ctxt::Ctxt::new();
    drop(cx);
}

#[test]
fn typos_get_a_suggestion() {
    use crate::symbol::{closest, FIELD_BIGTABLE_KEYS, STRUCT_BIGTABLE_KEYS};
    assert_eq!(
        closest("famly", STRUCT_BIGTABLE_KEYS).map(|s| s.0),
        Some("family")
    );
    assert_eq!(
        closest("colum", FIELD_BIGTABLE_KEYS).map(|s| s.0),
        Some("column")
    );
    assert_eq!(closest("qualifier", FIELD_BIGTABLE_KEYS).map(|s| s.0), None);
}

#[test]
fn evolving_struct() {
    let out = derive(quote! {
        #[bigtable(table = "profiles", family = "p", rename_all = "camelCase")]
        #[ttl(default = "30d")]
        struct Profile {
            #[bigtable(key)]
            user_id: String,
            display_name: String,
            #[bigtable(default)]
            visit_count: u64,
            #[bigtable(default = "english")]
            locale: String,
            #[bigtable(skip)]
            cache: Vec<String>,
        }
    });
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn enum_by_name() {
    let out = crate::value::derive_cell_codec(quote! {
        #[bigtable(by_name, rename_all = "snake_case")]
        enum Status {
            Active,
            OnHold,
            #[bigtable(rename = "gone")]
            Deleted,
        }
    });
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn enum_by_number() {
    let out = crate::value::derive_cell_codec(quote! {
        #[bigtable(by_number)]
        #[repr(i32)]
        enum Plan {
            Free = 0,
            Pro = 2,
        }
    });
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn newtype() {
    let codec = crate::value::derive_cell_codec(quote!(
        struct UserId(String);
    ));
    let key = crate::value::derive_key_part(quote!(
        struct UserId(String);
    ));
    insta::assert_snapshot!(format!("{}\n{}", pretty(codec), pretty(key)));
}
