//! Pyroscope's merge of generated class and library names: the parts
//! that differ from run to run (counters, addresses, random suffixes) are
//! replaced so that the same code gets the same frame name.

use std::sync::LazyLock;

use regex::Regex;

struct Rule {
    pattern: &'static str,
    replacement: &'static str,
}

const RULES: [Rule; 6] = [
    // jdk/internal/reflect/GeneratedMethodAccessor31
    Rule {
        pattern: r"^(jdk/internal/reflect/GeneratedMethodAccessor)([0-9]+)$",
        replacement: "${1}_",
    },
    // Foo$$Lambda$669.0x0000000800fd7318, Foo$$Lambda.0x00007ffa600c4da0, Foo$$Lambda$12
    Rule {
        pattern: r"^(.+\$\$Lambda)(\$?[0-9]*[./](0x)?[0-9a-f]+|[0-9]+)$",
        replacement: "${1}_",
    },
    // libzstd-jni-1.5.1-16931311898282279136.so
    Rule {
        pattern: r"^(\.?/tmp/)?(libzstd-jni-[0-9]+\.[0-9]+\.[0-9]+-)([0-9]+)(\.so)( \(deleted\))?$",
        replacement: "libzstd-jni-_.so",
    },
    // ./tmp/libamazonCorrettoCryptoProvider109b39cf33c563eb.so
    Rule {
        pattern: r"^(\.?/tmp/)?(lib)?(amazonCorrettoCryptoProvider)(NativeLibraries\.)?([0-9a-f]{16})(/libcrypto|/libamazonCorrettoCryptoProvider)?(\.so)( \(deleted\))?$",
        replacement: "libamazonCorrettoCryptoProvider_.so",
    },
    // the Pyroscope agent's own copy of async-profiler
    Rule {
        pattern: r"^(\.?/tmp/)?(libasyncProfiler)-(linux-arm64|linux-musl-x64|linux-x64|macos)-(17b9a1d8156277a98ccc871afa9a8f69215f92)(\.so)( \(deleted\))?$",
        replacement: "libasyncProfiler-_.so",
    },
    // Foo$$EnhancerBySpringCGLIB$$8b2c3b1a
    Rule {
        pattern: r"^(.+\$\$EnhancerBySpringCGLIB\$\$)(.*)$",
        replacement: "${1}_",
    },
];

static COMPILED: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    RULES
        .iter()
        .filter_map(|rule| Some((Regex::new(rule.pattern).ok()?, rule.replacement)))
        .collect()
});

fn compiled() -> &'static [(Regex, &'static str)] {
    &COMPILED
}

/// A class or method symbol as Pyroscope names it: each rule applied in
/// turn to the result of the previous one.
pub(crate) fn merge_generated_names(symbol: &str) -> String {
    let mut name = symbol.to_owned();
    for (regex, replacement) in compiled() {
        if regex.is_match(&name) {
            name = regex.replace_all(&name, *replacement).into_owned();
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(compiled().len(), RULES.len());
    }

    #[test]
    fn generated_names_merge_as_pyroscope_merges_them() {
        let cases = [
            ("jdk/internal/reflect/GeneratedMethodAccessor31", "jdk/internal/reflect/GeneratedMethodAccessor_"),
            ("org/example/rideshare/OrderService$$Lambda$669.0x0000000800fd7318", "org/example/rideshare/OrderService$$Lambda_"),
            ("Fib$$Lambda.0x00007ffa600c4da0", "Fib$$Lambda_"),
            ("Fib$$Lambda$12/1234", "Fib$$Lambda_"),
            ("libzstd-jni-1.5.1-16931311898282279136.so", "libzstd-jni-_.so"),
            ("/tmp/libzstd-jni-1.5.1-16931311898282279136.so (deleted)", "libzstd-jni-_.so"),
            ("./tmp/libamazonCorrettoCryptoProvider109b39cf33c563eb.so", "libamazonCorrettoCryptoProvider_.so"),
            ("./tmp/amazonCorrettoCryptoProviderNativeLibraries.7382c2f79097f415/libcrypto.so (deleted)", "libamazonCorrettoCryptoProvider_.so"),
            ("libasyncProfiler-linux-x64-17b9a1d8156277a98ccc871afa9a8f69215f92.so", "libasyncProfiler-_.so"),
            ("com/example/Foo$$EnhancerBySpringCGLIB$$8b2c3b1a", "com/example/Foo$$EnhancerBySpringCGLIB$$_"),
            ("java/lang/Thread", "java/lang/Thread"),
            ("libasyncProfiler-linux-x64-0000.so", "libasyncProfiler-linux-x64-0000.so"),
        ];
        for (symbol, merged) in cases {
            assert_eq!(merge_generated_names(symbol), merged, "{symbol}");
        }
    }
}
