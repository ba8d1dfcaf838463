//! Any bytes, read as a key under any list of key column types: an error or a key, never a panic; and a
//! key that decodes encodes back to the same bytes' prefix it was read from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tabula_store::keys::{decode_pk, encode_pk, prefix_len};
use tabula_store::PkType;

fuzz_target!(|data: &[u8]| {
    // The first two bytes choose 1 to 4 key column types, two bits each; the rest is the key.
    let Some((choice, key)) = data.split_first_chunk::<2>() else { return };
    let choice = u16::from_be_bytes(*choice);
    let types: Vec<PkType> = (0..1 + (choice & 3) as usize)
        .map(|i| [PkType::Integer, PkType::String, PkType::Binary, PkType::Integer][(choice >> (2 + 2 * i) & 3) as usize])
        .collect();
    if let Ok(values) = decode_pk(key, &types) {
        let mut again = Vec::new();
        encode_pk(&mut again, &values);
        assert_eq!(decode_pk(&again, &types).ok(), Some(values), "what decodes re-encodes to itself");
    }
    for n in 0..=types.len() {
        let _ = prefix_len(key, &types, n);
    }
});
