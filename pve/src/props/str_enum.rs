//! `str_enum!`: the closed string enumerations of the schema (`enum` lists) as Rust enums with
//! the exact wire spelling, parsing that names the field and lists what is allowed.

/// Declare a wire enumeration: `str_enum!(/// doc
/// pub enum Name: "field" { Variant = "wire", ... })`.
macro_rules! str_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $field:literal {
            $($variant:ident = $wire:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $(
                #[doc = concat!("`", $wire, "`")]
                $variant
            ),+
        }

        impl $name {
            /// Every value, in schema order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling PVE uses.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::error::PveError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($wire => Ok($name::$variant),)+
                    _ => Err($crate::props::kv::invalid(
                        $field,
                        format!("'{}' is not one of: {}", s, [$($wire),+].join(", ")),
                    )),
                }
            }
        }
    };
}

pub(crate) use str_enum;
